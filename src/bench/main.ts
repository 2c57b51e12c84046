// `npm run bench`: merges a synthetic bf16 set (default ≈1 GB over base + 3 agents) and reports, in
// one run, raw read throughput of the same files, per-stage times, end-to-end throughput, the ratio
// end-to-end / raw read, the CPU reference for comparison, and peak memory. With --studio it instead
// merges a generated Llama-shaped set in the studio (headless Chromium) and the CLI (studio.ts); with
// --cli-only, the CLI alone on that set (cli-set.ts), for machines without Chromium.
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openModel, type Model } from '../format/model.ts';
import { nodeFolder, nodeModelFiles } from '../io/node.ts';
import type { ModelFile } from '../io/source.ts';
import { StageClock, timedFolder, timedSource } from '../io/timed.ts';
import { mergeModels } from '../driver/driver.ts';
import type { MergeEngine } from '../engine/contract.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import { createGpuEngine } from '../engine/gpu/gpu-engine.ts';
import type { SelectRoute } from '../engine/gpu/topk-select.ts';
import { describeAdapter, requestEngineDevice } from '../engine/gpu/device.ts';
import { defaultParams } from '../methods/defaults.ts';
import type { MethodName } from '../methods/types.ts';
import { acquireNodeGpu } from '../cli/node-gpu.ts';
import { formatBytes } from '../format/inspect.ts';
import { rawRead } from './raw-read.ts';
import { writeSyntheticSet } from './synthetic.ts';
import { median, type DawnTicks } from './cli-set.ts';

const { values } = parseArgs({
  options: {
    'size-mb': { type: 'string', default: '1000' },
    agents: { type: 'string', default: '3' },
    methods: { type: 'string', default: 'ram,ramplus' },
    'cpu-share': { type: 'string', default: '0.1' },
    studio: { type: 'boolean', default: false },
    /** The studio bench's set and methods through the CLI alone, where no Chromium is (a GPU server). */
    'cli-only': { type: 'boolean', default: false },
    layers: { type: 'string', default: '8' },
    /** The set's hidden and MLP widths (default 896, Qwen2-0.5B's, and Qwen2's ratio): 4096 and 11008 for a 7B's. */
    hidden: { type: 'string', default: '896' },
    intermediate: { type: 'string' },
    /** Both sides' memory budget in MiB (the studio takes 512, 1024, 2048 or 4096); none: the default. */
    'memory-budget': { type: 'string' },
    /** With --cli-only, the CLI's --window-elements (the studio has no such setting). */
    'window-elements': { type: 'string' },
    vocab: { type: 'string', default: '32000' },
    port: { type: 'string', default: '5223' },
    clean: { type: 'boolean', default: false },
    /** The TIES-family top-k select: 'sampled' (the engine's default) or 'radix' alone, to compare. */
    select: { type: 'string', default: 'sampled' },
    /**
     * The driver's read-ahead and write-behind: 'on' (its default), 'off', or 'both', each method
     * without, then with, in one run.
     */
    overlap: { type: 'string', default: 'on' },
    /**
     * With --cli-only, the dawn.node tick loops to run the CLI with: 'paced' (its default), 'spin' or
     * 'both', alternating each round (src/cli/tick-pacing.ts).
     */
    'dawn-ticks': { type: 'string', default: 'paced' },
    /** Merges per method and setting, alternating where --overlap both: the tables show medians. */
    repeat: { type: 'string', default: '1' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(
    [
      'npm run bench -- [--size-mb 1000] [--agents 3] [--methods ram,ramplus] [--cpu-share 0.1] [--repeat 1]',
      '                 [--overlap on|off|both] [--select sampled|radix]',
      '  A synthetic bf16 set merged by the GPU engine and the CPU reference: raw read, stages, GB/s, peak memory.',
      'npm run bench -- --studio|--cli-only [--layers 8] [--hidden 896] [--intermediate N] [--vocab 32000]',
      '                 [--memory-budget MiB] [--window-elements N] [--dawn-ticks paced|spin|both] [--port 5223] [--clean]',
      '  A generated Llama-shaped set merged in the studio (headless Chromium) and by the CLI, or by the CLI alone.',
      'npm run bench:eval -- --help   the evaluation bench (a Qwen2-0.5B-shaped model, CLI and studio).',
      '',
    ].join('\n'),
  );
  process.exit(0);
}
const overlaps = { on: [true], off: [false], both: [false, true] }[values.overlap];
if (!overlaps) throw new Error(`--overlap takes on, off or both, not ${values.overlap}`);

if (values['cli-only'] || values.studio) {
  // The generated Llama-shaped set, through the CLI alone (cli-set.ts) or the studio and the CLI.
  const options = {
    layers: Number(values.layers),
    hidden: Number(values.hidden),
    ...(values.intermediate ? { intermediate: Number(values.intermediate) } : {}),
    ...(values['memory-budget'] ? { memoryBudget: Number(values['memory-budget']) * 2 ** 20 } : {}),
    ...(values['window-elements'] ? { windowElements: Number(values['window-elements']) } : {}),
    vocab: Number(values.vocab),
    agents: Number(values.agents),
    methods: values.methods.split(',') as MethodName[],
    workDir: '.bench',
    clean: values.clean,
  };
  const ticks: DawnTicks[] | undefined = (
    { paced: ['paced'], spin: ['spin'], both: ['spin', 'paced'] } as Record<string, DawnTicks[]>
  )[values['dawn-ticks']];
  if (!ticks) throw new Error(`--dawn-ticks takes paced, spin or both, not ${values['dawn-ticks']}`);
  if (values.studio && values['window-elements'])
    throw new Error(
      "--window-elements is the CLI's: the studio has no such setting (use it with --cli-only)",
    );
  const table = values['cli-only']
    ? await (
        await import('./cli-set.ts')
      ).runCliBench({ ...options, ticks, repeat: Math.max(1, Number(values.repeat)) })
    : await (
        await import('./studio.ts')
      ).runStudioBench({
        ...options,
        port: Number(values.port),
        overlap: values.overlap as 'on' | 'off' | 'both',
        repeat: Math.max(1, Number(values.repeat)),
      });
  process.stdout.write(`${table}\n`);
  process.exit(0);
}

const sizeMb = Number(values['size-mb']);
const agents = Number(values.agents);
const dir = join('.bench', `set-${sizeMb}mb-${agents}`);
const modelBytes = (sizeMb * 1e6) / (agents + 1);

const openSources: { close(): Promise<void> }[] = [];

async function loadTimed(path: string, clock: StageClock): Promise<Model> {
  const raw = await nodeModelFiles(path);
  openSources.push(...raw.map((f) => f.source));
  const files: ModelFile[] = raw.map((f) => ({ name: f.name, source: timedSource(f.source, clock) }));
  return openModel(path, files);
}

interface Row {
  engine: string;
  overlap: boolean;
  method: MethodName;
  inputBytes: number;
  ms: number;
  readMs: number;
  writeMs: number;
  upload?: number;
  compute?: number;
  readback?: number;
}

async function runOne(engine: MergeEngine, method: MethodName, share: number, overlap = true): Promise<Row> {
  const readClock = new StageClock();
  const writeClock = new StageClock();
  const base = await loadTimed(join(dir, 'base'), readClock);
  const models: Model[] = [];
  for (let t = 0; t < agents; t++) models.push(await loadTimed(join(dir, `agent-${t}`), readClock));
  if (share < 1) {
    // The CPU reference is slow: time it on the first tensors only and scale by bytes.
    const keep = [...base.tensors.keys()].slice(0, Math.max(1, Math.round(base.tensors.size * share)));
    for (const m of [base, ...models])
      m.tensors = new Map([...m.tensors].filter(([name]) => keep.includes(name)));
  }
  const outDir = join('.bench', `out-${engine.kind}-${method}`);
  await rm(outDir, { recursive: true, force: true });
  const inputBytes = [...base.tensors.values()].reduce((sum, t) => sum + (t.end - t.begin), 0) * (agents + 1);
  const before = engine.timings ? { ...engine.timings } : undefined;
  const start = performance.now();
  await mergeModels({
    base,
    agents: models,
    engine,
    overlap,
    params: defaultParams(method, agents),
    out: timedFolder(nodeFolder(outDir), writeClock),
    baseLabel: 'base',
    agentLabels: models.map((_, t) => `agent-${t}`),
  });
  const ms = performance.now() - start;
  await rm(outDir, { recursive: true, force: true });
  for (const source of openSources.splice(0)) await source.close();
  const after = engine.timings;
  return {
    engine: engine.description,
    overlap,
    method,
    inputBytes,
    ms,
    readMs: readClock.ms,
    writeMs: writeClock.ms,
    ...(before && after
      ? {
          upload: after.upload - before.upload,
          compute: after.compute - before.compute,
          readback: after.readback - before.readback,
        }
      : {}),
  };
}

const methods = values.methods.split(',') as MethodName[];

if (!existsSync(join(dir, `agent-${agents - 1}`, 'model.safetensors'))) {
  process.stderr.write(`Generating the synthetic set in ${dir} (${sizeMb} MB)…\n`);
  await writeSyntheticSet({ modelBytes, agents, hidden: 1024, seed: 1 }, (name) =>
    nodeFolder(join(dir, name)),
  );
}

const files = ['base', ...Array.from({ length: agents }, (_, t) => `agent-${t}`)].map((m) =>
  join(dir, m, 'model.safetensors'),
);
const raw = await rawRead(files);
const node = await acquireNodeGpu();
const { device, adapterInfo } = await requestEngineDevice(node.gpu);
const adapter = describeAdapter(adapterInfo);
const gpuRows: Row[] = [];
const repeat = Math.max(1, Number(values.repeat));
/** Per method, every repeat's time with ÷ without overlap, where --overlap both. */
const pairs = new Map<MethodName, number[]>();
/** Per top-k method, how its selects were settled (topk-select.ts routes), summed over its runs. */
const routes = new Map<MethodName, Map<SelectRoute, number>>();
for (const method of methods) {
  const counted = new Map<SelectRoute, number>();
  const engine = createGpuEngine(device, {
    agents,
    adapterDescription: adapter,
    topKSelect: values.select === 'radix' ? 'radix' : 'sampled',
    onSelectRoutes: (_, taken) => {
      for (const r of taken) counted.set(r, (counted.get(r) ?? 0) + 1);
    },
  });
  const runs = overlaps.map((): Row[] => []);
  for (let r = 0; r < repeat; r++)
    for (const [o, overlap] of overlaps.entries()) runs[o]!.push(await runOne(engine, method, 1, overlap));
  engine.destroy();
  for (const rows of runs) gpuRows.push(median(rows));
  const [without, withOverlap] = runs;
  if (without && withOverlap)
    pairs.set(
      method,
      withOverlap.map((row, r) => row.ms / without[r]!.ms),
    );
  // Every run settles the same selects: one run's.
  for (const [route, n] of counted) counted.set(route, n / (repeat * overlaps.length));
  if (counted.size) routes.set(method, counted);
}
const peakRss = process.resourceUsage().maxRSS * 1024;
node.release();
const cpuRows: Row[] = [];
for (const method of methods)
  cpuRows.push(await runOne(createCpuEngine({ agents }), method, Number(values['cpu-share'])));

const gbps = (bytes: number, ms: number) => bytes / 1e9 / (ms / 1000);
const rawGbps = gbps(raw.bytes, raw.ms);
const lines = [
  `Adapter: ${adapter} (${node.driver}). Set: ${formatBytes(raw.bytes)} of bf16 over base + ${agents} agents, ${dir}.`,
  '',
  '| engine | method | input | end-to-end | GB/s | ÷ raw read | read | upload | compute | readback | write |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
  `| raw read (16 MB chunks) | — | ${formatBytes(raw.bytes)} | ${(raw.ms / 1000).toFixed(2)} s | ${rawGbps.toFixed(3)} | 1.00 | | | | | |`,
];
for (const row of [...gpuRows, ...cpuRows]) {
  const s = (ms: number | undefined) => (ms === undefined ? '—' : `${(ms / 1000).toFixed(2)} s`);
  const rate = gbps(row.inputBytes, row.ms);
  lines.push(
    `| ${row.engine.startsWith('CPU') ? 'CPU reference' : row.overlap ? 'WebGPU' : 'WebGPU, no overlap'} | ${row.method} | ${formatBytes(row.inputBytes)} | ${s(row.ms)} | ${rate.toFixed(3)} | ${(rate / rawGbps).toFixed(3)} | ${s(row.readMs)} | ${s(row.upload)} | ${s(row.compute)} | ${s(row.readback)} | ${s(row.writeMs)} |`,
  );
}
if (repeat > 1) {
  lines.push('', `Median of ${repeat} runs each.`);
  for (const [method, ratios] of pairs)
    lines.push(
      `- ${method}, with ÷ without overlap, run by run: ${ratios.map((x) => x.toFixed(2)).join(', ')}`,
    );
}
for (const [method, counted] of routes) {
  const part = (r: SelectRoute, what: string) => (counted.get(r) ? [`${counted.get(r)} ${what}`] : []);
  lines.push(
    '',
    `${method} top-k selects: ${[
      ...part('sample', 'exact from a sample of the whole tensor'),
      ...part('bracket', 'by one count pass over a sampled bracket'),
      ...part('between', 'by the keys that pass collected inside the bracket'),
      ...part('radix', 'by the radix histogram passes'),
      ...part('trivial', 'keeping all or nothing'),
    ].join(', ')}.`,
  );
}
lines.push(
  '',
  `Peak RSS during the WebGPU merges: ${formatBytes(peakRss)} (input set ${formatBytes(raw.bytes)}).`,
);
process.stdout.write(`${lines.join('\n')}\n`);
process.exit(0);

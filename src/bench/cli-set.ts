// The generated Llama-shaped set that the studio bench merges, and the CLI run on it as a person runs
// it. `npm run bench -- --cli-only` uses these alone, where no Chromium is (a GPU server): per method,
// the CLI's merge time, ÷ a RAM merge of the same run, GB/s, ÷ raw read and the process tree's peak
// memory; studio.ts adds the studio's side.
import { DAWN_TICKS_ENV } from '../cli/tick-pacing.ts';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { formatBytes } from '../format/inspect.ts';
import { numel } from '../format/safetensors.ts';
import { nodeFolder } from '../io/node.ts';
import type { MethodName } from '../methods/types.ts';
import { llamaSpecs, writeLlamaSet, type LlamaSetOptions } from './llama-set.ts';
import { childrenCpuSeconds, sampleMemory, treeOf, type Memory } from './memory.ts';
import { rawRead } from './raw-read.ts';

export interface SetOptions {
  /** Layers of the generated set (Qwen2's widths for `hidden`; vocab below). */
  layers: number;
  /** Hidden width (default 896, Qwen2-0.5B's) and MLP width (default Qwen2's ratio to it). */
  hidden?: number;
  intermediate?: number;
  vocab: number;
  agents: number;
  /** Where sets go; they are kept for the next run unless `clean`. */
  workDir: string;
  /** Both sides' memory budget in bytes (the CLI's --memory-budget, the engine card's choice); none: the default. */
  memoryBudget?: number;
  /** The CLI's --window-elements (the studio has no such setting); none: the default. */
  windowElements?: number;
}

export interface BenchSet {
  dir: string;
  /** Bytes of one model's tensors. */
  modelBytes: number;
  models: string[];
  files: string[];
  raw: { bytes: number; ms: number };
  /** `--base DIR --model DIR …` for the CLI. */
  modelArgs: string[];
}

/** Generates the set once (kept under workDir) and reads it raw, which also warms the page cache. */
export async function benchSet(o: SetOptions): Promise<BenchSet> {
  const set: LlamaSetOptions = {
    layers: o.layers,
    hidden: o.hidden ?? 896,
    ...(o.intermediate ? { intermediate: o.intermediate } : {}),
    vocab: o.vocab,
    agents: o.agents,
    seed: 1,
    shardBytes: 400_000_000,
  };
  const modelBytes = llamaSpecs(set).reduce((sum, s) => sum + numel(s.shape) * 2, 0);
  const widths =
    o.hidden && o.hidden !== 896 ? `-${o.hidden}h${o.intermediate ? `-${o.intermediate}i` : ''}` : '';
  const dir = join(o.workDir, `llama-${o.layers}l${widths}-${o.vocab}v-${o.agents}a`);
  if (!existsSync(join(dir, `agent-${o.agents - 1}`, 'config.json'))) {
    process.stderr.write(`Generating ${o.agents + 1} models of ${formatBytes(modelBytes)} in ${dir}…\n`);
    await writeLlamaSet(set, (name) => nodeFolder(join(dir, name)));
  }
  const models = ['base', ...Array.from({ length: o.agents }, (_, t) => `agent-${t}`)];
  const files = models.flatMap((m) => {
    const listing = spawnSync('ls', [join(dir, m)], { encoding: 'utf8' }).stdout.split('\n');
    return listing.filter((f) => f.endsWith('.safetensors')).map((f) => join(dir, m, f));
  });
  const raw = await rawRead(files);
  const modelArgs = [
    '--base',
    join(dir, 'base'),
    ...models.slice(1).flatMap((m) => ['--model', join(dir, m)]),
  ];
  return { dir, modelBytes, models, files, raw, modelArgs };
}

export interface CliRun {
  ms: number;
  peak: Memory;
  /** CPU seconds of the CLI's whole run (user and system, every thread), from its exit. */
  cpuS: number;
  stderr: string;
}

/**
 * How the CLI's dawn.node settles its promises: 'paced' (its default: src/cli/tick-pacing.ts) or 'spin'
 * (dawn.node's own setImmediate loop, DAWN_TICKS_ENV=spin).
 */
export type DawnTicks = 'paced' | 'spin';

/** This process's environment for a child whose dawn.node ticks `ticks`. */
export function dawnTicksEnv(ticks: DawnTicks): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (ticks === 'spin') env[DAWN_TICKS_ENV] = 'spin';
  else delete env[DAWN_TICKS_ENV];
  return env;
}

/** Runs the CLI as a person would; its time is the merge time it prints, its memory the tree's peak. */
export async function cli(args: string[], ticks: DawnTicks = 'paced'): Promise<CliRun> {
  const child = spawn(process.execPath, [resolve('bin/merge-studio.mjs'), ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: dawnTicksEnv(ticks),
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('the CLI did not start');
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const sampler = sampleMemory(() => treeOf(pid));
  const cpuBefore = await childrenCpuSeconds();
  const started = performance.now();
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  const wall = performance.now() - started;
  const cpuS = (await childrenCpuSeconds()) - cpuBefore;
  const peak = await sampler.stop();
  if (code !== 0) throw new Error(`merge-studio ${args[0]} exited ${code}: ${stderr.slice(-2000)}`);
  const printed = / in ([\d.]+) s;/.exec(stderr);
  return { ms: printed ? Number(printed[1]) * 1000 : wall, peak, cpuS, stderr };
}

/** RAM+ takes ρ from statistics already computed (the studio's own; for the CLI, analyze's JSON). */
export const usesStatsIn = (method: MethodName): boolean => method === 'ramplus' || method === 'ramplus_soft';

/** `analyze --json` of the set, where a method of `methods` will take it as --stats-in. */
export async function cliStats(
  set: BenchSet,
  methods: MethodName[],
  statsPath: string,
): Promise<CliRun | null> {
  if (!methods.some(usesStatsIn)) return null;
  return cli(['analyze', ...set.modelArgs, '--json', statsPath]);
}

/** One CLI merge of the set into a scratch folder, removed again (disk is limited). */
export async function cliMerge(
  set: BenchSet,
  method: MethodName,
  workDir: string,
  statsPath: string,
  ticks: DawnTicks = 'paced',
  limits: Pick<SetOptions, 'memoryBudget' | 'windowElements'> = {},
): Promise<CliRun> {
  const out = join(workDir, `cli-${method}`);
  await rm(out, { recursive: true, force: true });
  const statsIn = usesStatsIn(method) ? ['--stats-in', statsPath] : [];
  const budget = limits.memoryBudget ? ['--memory-budget', String(limits.memoryBudget)] : [];
  const windows = limits.windowElements ? ['--window-elements', String(limits.windowElements)] : [];
  const run = await cli(
    ['merge', ...set.modelArgs, '--method', method, ...statsIn, ...budget, ...windows, '--out', out],
    ticks,
  );
  await rm(out, { recursive: true, force: true });
  return run;
}

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

/** The set and its raw read, and the memory budget both sides ran with: the first lines of both benches' reports. */
export function describeSet(set: BenchSet, o: SetOptions): string[] {
  const rawGbps = set.raw.bytes / 1e9 / (set.raw.ms / 1000);
  return [
    `Set: ${set.dir}, ${formatBytes(set.raw.bytes)} over base + ${o.agents} agents (bf16, Qwen2 widths, hidden ${o.hidden ?? 896}, ${o.layers} layers, vocab ${o.vocab}); raw read ${seconds(set.raw.ms)} = ${rawGbps.toFixed(3)} GB/s.`,
    `Memory budget: ${o.memoryBudget ? formatBytes(o.memoryBudget) : 'the default'}${o.windowElements ? `; the CLI's windows: ${o.windowElements} elements at most` : ''}.`,
  ];
}

/** The run of median time (the later of the two middle ones, for an even count). */
export function median<T extends { ms: number }>(runs: readonly T[]): T {
  const sorted = [...runs].sort((a, b) => a.ms - b.ms);
  const middle = sorted[Math.floor(sorted.length / 2)];
  if (!middle) throw new Error('no run to take the median of');
  return middle;
}

/** The engine line the CLI printed ("Engine: nvidia … (…)"), for the table's heading. */
export const engineLine = (stderr: string): string => /^Engine: (.+)$/m.exec(stderr)?.[1] ?? 'unknown';

/**
 * `npm run bench -- --cli-only`: the CLI side of the studio bench, for machines without Chromium.
 * `ticks`: the dawn.node tick loops to run each method with, in this order every round (both:
 * spinning, then paced, so that the table shows paced ÷ spinning from the same run).
 */
export async function runCliBench(
  o: SetOptions & { methods: MethodName[]; clean: boolean; ticks?: DawnTicks[]; repeat?: number },
): Promise<string> {
  const set = await benchSet(o);
  const statsPath = join(o.workDir, 'stats.json');
  const ticks = o.ticks ?? ['paced'];
  const repeat = Math.max(1, o.repeat ?? 1);
  /** Per method, per tick loop, every round's run. */
  const runs = new Map<MethodName, Map<DawnTicks, CliRun[]>>();
  let stats: CliRun | null;
  try {
    stats = await cliStats(set, o.methods, statsPath);
    for (let round = 0; round < repeat; round++)
      for (const method of o.methods)
        for (const t of ticks) {
          process.stderr.write(
            `${method}: CLI${ticks.length > 1 ? `, ${t} ticks` : ''} (${round + 1} of ${repeat})…\n`,
          );
          const byTicks = runs.get(method) ?? new Map<DawnTicks, CliRun[]>();
          runs.set(method, byTicks);
          byTicks.set(t, [
            ...(byTicks.get(t) ?? []),
            await cliMerge(set, method, o.workDir, statsPath, t, o),
          ]);
        }
  } finally {
    if (o.clean) await rm(set.dir, { recursive: true, force: true });
  }
  const inputBytes = set.modelBytes * (o.agents + 1);
  const gbps = (ms: number): number => inputBytes / 1e9 / (ms / 1000);
  const rawGbps = gbps(set.raw.ms);
  const medianOf = (method: MethodName, t: DawnTicks): CliRun | undefined => {
    const list = runs.get(method)?.get(t);
    return list?.length ? median(list) : undefined;
  };
  const [firstMethod] = o.methods;
  const [firstTicks] = ticks;
  const first = firstMethod && firstTicks ? medianOf(firstMethod, firstTicks) : undefined;
  const lines = [
    ...describeSet(set, o),
    `Engine: ${first ? engineLine(first.stderr) : '—'}.`,
    `Statistics: CLI analyze ${stats ? seconds(stats.ms) : '— (not run)'}.`,
    ...(repeat > 1 ? [`Medians of ${repeat} rounds.`] : []),
    '',
    '| method | dawn.node ticks | CLI | ÷ RAM | GB/s | ÷ raw read | CPU s (÷ wall) | CLI peak PSS / RSS |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const method of o.methods)
    for (const t of ticks) {
      const run = medianOf(method, t);
      if (!run) continue;
      const ram = medianOf('ram', t);
      lines.push(
        `| ${method} | ${t} | ${seconds(run.ms)} | ${ram ? (run.ms / ram.ms).toFixed(2) : '—'} | ${gbps(run.ms).toFixed(3)} | ${(gbps(run.ms) / rawGbps).toFixed(3)} | ${run.cpuS.toFixed(1)} (${(run.cpuS / (run.ms / 1000)).toFixed(2)}) | ${formatBytes(run.peak.pss)} / ${formatBytes(run.peak.rss)} |`,
      );
    }
  if (ticks.includes('spin') && ticks.includes('paced')) {
    lines.push('', 'Paced ÷ spinning ticks, round by round (wall time; CPU seconds):', '');
    for (const method of o.methods) {
      const spin = runs.get(method)?.get('spin') ?? [];
      const paced = runs.get(method)?.get('paced') ?? [];
      const pairs = paced
        .map((p, i) => [p, spin[i]] as const)
        .filter((pair): pair is readonly [CliRun, CliRun] => !!pair[1]);
      lines.push(
        `- ${method}: ${pairs.map(([p, s]) => `${(p.ms / s.ms).toFixed(2)}; ${(p.cpuS / s.cpuS).toFixed(2)}`).join(' · ')}`,
      );
    }
  }
  return lines.join('\n');
}

// Latency and CPU of a small GPU round trip (a 256-byte copy, then mapAsync) through dawn.node, with its
// device ticks spinning (MERGE_STUDIO_DAWN_TICKS=spin) and paced (src/cli/tick-pacing.ts), each in a
// child process of its own, alternating: what the pacer's spin window keeps for the TIES select's
// readbacks, which wait on such trips once or twice per tensor.
// `node --import ./bin/register.mjs src/bench/round-trip.ts [--trips 300] [--rounds 3]`
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { acquireNodeGpu } from '../cli/node-gpu.ts';
import { dawnTicksEnv, median, type DawnTicks } from './cli-set.ts';

const { values } = parseArgs({
  options: {
    trips: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '3' },
    child: { type: 'boolean', default: false },
  },
});
const trips = Number(values.trips);

if (values.child) {
  const node = await acquireNodeGpu();
  const device = await node.adapter.requestDevice();
  const source = device.createBuffer({ size: 256, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const target = device.createBuffer({ size: 256, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
  const trip = async (): Promise<void> => {
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(source, 0, target, 0, 256);
    device.queue.submit([encoder.finish()]);
    await target.mapAsync(GPUMapMode.READ);
    target.unmap();
  };
  for (let i = 0; i < 20; i++) await trip();
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < trips; i++) await trip();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  process.stdout.write(JSON.stringify({ ms: ms / trips, cpuMs: (used.user + used.system) / 1e3 / trips }));
  device.destroy();
  node.release();
  process.exit(0);
}

const modes: DawnTicks[] = ['spin', 'paced'];
const results = new Map<DawnTicks, { ms: number; cpuMs: number }[]>(modes.map((m) => [m, []]));
for (let round = 0; round < Number(values.rounds); round++)
  for (const mode of modes) {
    const env = dawnTicksEnv(mode);
    const child = spawnSync(
      process.execPath,
      ['--import', './bin/register.mjs', 'src/bench/round-trip.ts', '--child', '--trips', String(trips)],
      { env, encoding: 'utf8' },
    );
    const line = child.stdout.trim().split('\n').pop() ?? '';
    if (child.status !== 0 || !line.startsWith('{'))
      throw new Error(`round trip child failed: ${child.stderr}`);
    results.get(mode)?.push(JSON.parse(line) as { ms: number; cpuMs: number });
  }
const lines = [
  `${trips} round trips per run, ${values.rounds} runs each, alternating (the run of median time):`,
  '',
  '| dawn.node ticks | ms per round trip | CPU ms per round trip |',
  '|---|---|---|',
];
for (const mode of modes) {
  // The run of median time, with its CPU.
  const run = median(results.get(mode) ?? []);
  lines.push(`| ${mode} | ${run.ms.toFixed(3)} | ${run.cpuMs.toFixed(3)} |`);
}
process.stdout.write(`${lines.join('\n')}\n`);

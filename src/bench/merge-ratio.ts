// One tensor merged through the GPU engine by each method, from memory (no file reads or writes), timed
// in process CPU time (SwiftShader's threads are this process's) and wall time, best of the repeats,
// and divided by RAM's: on a shared machine a steadier ratio than the end-to-end bench's wall times.
// `node --import ./bin/register.mjs src/bench/merge-ratio.ts [--log2 22] [--repeats 6] [--methods ram,ramplus_tl] [--radix-too] [--steps 1]`
import { parseArgs } from 'node:util';
import { acquireNodeGpu } from '../cli/node-gpu.ts';
import { floatStream } from '../demo/rng.ts';
import { requestEngineDevice } from '../engine/gpu/device.ts';
import { createGpuEngine } from '../engine/gpu/gpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { tensorInput } from '../methods/tensors.ts';
import type { MethodName } from '../methods/types.ts';
import { emptyBranchCounts } from '../methods/tensors.ts';

const { values } = parseArgs({
  options: {
    log2: { type: 'string', default: '22' },
    repeats: { type: 'string', default: '6' },
    methods: { type: 'string', default: 'ram,ramplus_tl' },
    /** Also time each top-k method with the radix select alone (GpuEngineOptions.topKSelect). */
    'radix-too': { type: 'boolean', default: false },
    /** Agents move a changed element by 1 to `steps` bf16 steps: more steps, more distinct |τ| near a threshold. */
    steps: { type: 'string', default: '1' },
  },
});
const numel = 2 ** Number(values.log2);
const repeats = Number(values.repeats);
const methods = ['ram', ...values.methods.split(',').filter((m) => m !== 'ram')] as MethodName[];
/** Shares of elements each agent moved (by one bf16 step by default, as in kernel-profile's RL set). */
const CHANGED = [0.3, 0.6, 0.8];

const random = floatStream(7);
// bf16 values of magnitude 2^-7 .. 2^-4, either sign.
const base = Uint16Array.from(
  { length: numel },
  () => (random() < 0.5 ? 0x8000 : 0) | (0x3c00 + Math.floor(random() * 0x200)),
);
const steps = Number(values.steps);
const agents = CHANGED.map((share) =>
  base.map((b) =>
    random() < share ? b + (1 + Math.floor(random() * steps)) * (random() < 0.5 ? 1 : -1) : b,
  ),
);
const input = tensorInput(
  'model.layers.0.mlp.up_proj.weight',
  'BF16',
  [base, ...agents].map((m) => new Uint8Array(m.buffer)),
);

const node = await acquireNodeGpu();
const engineDevice = await requestEngineDevice(node.gpu);
/** How the sampled engine settled each top-k of the last round. */
const routes = new Map<string, string>();
const engine = createGpuEngine(engineDevice.device, {
  agents: CHANGED.length,
  adapterDescription: 'merge-ratio',
  onSelectRoutes: (_, taken) => routes.set('last', taken.join(', ')),
});
const radixEngine = createGpuEngine(engineDevice.device, {
  agents: CHANGED.length,
  adapterDescription: 'merge-ratio, radix select',
  topKSelect: 'radix',
});
const TOPK: readonly MethodName[] = ['ties', 'breadcrumbs', 'breadcrumbs_ties'];
/** Rows: each method, then "method / radix select" where asked. */
const rows = methods.flatMap((m) =>
  values['radix-too'] && TOPK.includes(m) ? [m, `${m} / radix select`] : [m],
);
const best = new Map<string, { cpu: number; wall: number }>();
// Round 0 builds the pipelines and is not counted; methods alternate so load changes hit all alike.
for (let r = 0; r <= repeats; r++)
  for (const row of rows) {
    const method = row.split(' ')[0] as MethodName;
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    await (row === method ? engine : radixEngine).merge(input, {
      params: defaultParams(method, CHANGED.length),
      lambdas: CHANGED.map(() => 1),
      outDtype: 'BF16',
      emit: async () => undefined,
      // As the driver merges: the sparsifying methods count their branches.
      branches: emptyBranchCounts(CHANGED.length),
    });
    const used = process.cpuUsage(cpu0);
    if (r === repeats && row === method && routes.has('last')) routes.set(method, routes.get('last') ?? '');
    routes.delete('last');
    const cpu = (used.user + used.system) / 1e3;
    const wall = performance.now() - wall0;
    if (r === 0) continue;
    const b = best.get(row) ?? { cpu: Infinity, wall: Infinity };
    best.set(row, { cpu: Math.min(b.cpu, cpu), wall: Math.min(b.wall, wall) });
  }
const ram = best.get('ram') ?? { cpu: NaN, wall: NaN };
process.stdout.write(
  `\n${numel} bf16 elements, ${CHANGED.length} agents, one window, best of ${repeats}\n` +
    `| method | CPU ms | wall ms | CPU ÷ RAM | wall ÷ RAM |\n|---|---|---|---|---|\n`,
);
for (const row of rows) {
  const b = best.get(row) ?? { cpu: NaN, wall: NaN };
  process.stdout.write(
    `| ${row} | ${b.cpu.toFixed(0)} | ${b.wall.toFixed(0)} | ${(b.cpu / ram.cpu).toFixed(2)} | ` +
      `${(b.wall / ram.wall).toFixed(2)} |\n`,
  );
}
for (const [method, taken] of routes) process.stdout.write(`${method}: top-k routes ${taken}\n`);
engine.destroy();
radixEngine.destroy();
engineDevice.destroy();
node.release();

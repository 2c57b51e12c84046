// What counting a merge's branches costs (COUNT_BRANCHES in the TIES and task-arithmetic kernels): one
// bf16 tensor of 2^23 elements, base + 3 agents, merged on one device with and without counting,
// alternately, a warm-up first; process CPU time (the machine is shared, so ratios in one run).
//   node --import ./bin/register.mjs src/bench/branches-bench.ts [METHOD ...]   (default: ties)
import { encodeFloats } from '../format/dtype.ts';
import { acquireNodeGpu } from '../cli/node-gpu.ts';
import { describeAdapter, requestEngineDevice } from '../engine/gpu/device.ts';
import { createGpuEngine } from '../engine/gpu/gpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { emptyBranchCounts, type TensorInput } from '../methods/tensors.ts';
import { type MergeEngine } from '../engine/contract.ts';
import { seededRandom } from '../methods/rng.ts';
import { tensorInput } from '../methods/tensors.ts';
import type { MethodName } from '../methods/types.ts';

const NUMEL = 2 ** 23;
const AGENTS = 3;
const REPEATS = Number(process.env.REPEATS ?? 3);

/** Agents that change 10%, 30% and 50% of a Gaussian base by small amounts, in bf16. */
function tensor(): TensorInput {
  const random = seededRandom(3);
  const gaussian = (): number => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const base = Float64Array.from({ length: NUMEL }, () => gaussian() * 0.05);
  const agents = [0.1, 0.3, 0.5].map((rate) =>
    base.map((b) => (random() < rate ? b + gaussian() * 1e-3 : b)),
  );
  return tensorInput(
    'model.layers.0.mlp.up_proj.weight',
    'BF16',
    [base, ...agents].map((v) => encodeFloats('BF16', v)),
  );
}

async function cpuMs(
  engine: MergeEngine,
  input: TensorInput,
  method: MethodName,
  count: boolean,
): Promise<number> {
  const before = process.cpuUsage();
  await engine.merge(input, {
    params: defaultParams(method, AGENTS),
    lambdas: [1, 1, 1],
    outDtype: 'BF16',
    emit: async () => undefined,
    ...(count ? { branches: emptyBranchCounts(AGENTS) } : {}),
  });
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

const methods = (process.argv.slice(2) as MethodName[]).length
  ? (process.argv.slice(2) as MethodName[])
  : ['ties' as const];
const input = tensor();
const node = await acquireNodeGpu();
const { device, adapterInfo } = await requestEngineDevice(node.gpu);
const engine = createGpuEngine(device, { agents: AGENTS, adapterDescription: describeAdapter(adapterInfo) });
try {
  for (const method of methods) {
    await cpuMs(engine, input, method, false);
    await cpuMs(engine, input, method, true);
    const rows: string[] = [];
    for (let r = 0; r < REPEATS; r++) {
      const without = await cpuMs(engine, input, method, false);
      const withCounts = await cpuMs(engine, input, method, true);
      rows.push(
        `${(without / 1000).toFixed(2)} s → ${(withCounts / 1000).toFixed(2)} s (×${(withCounts / without).toFixed(3)})`,
      );
    }
    process.stdout.write(
      `${method}, 2^23 bf16 elements, N = ${AGENTS}, process CPU time without → with counting: ${rows.join('; ')}\n`,
    );
  }
} finally {
  engine.destroy();
  node.release();
}

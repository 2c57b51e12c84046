// Windows sized by a memory budget: a budget small enough to cut tensors into many windows must give
// the same output bytes as the default one, on fresh seeded inputs (poisoned outputs, so an element
// no window wrote shows), and both must agree with the CPU engine.
import { must } from '../../io/checked.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFloats, dtypeBits, type FloatDtype } from '../../format/dtype.ts';
import { createCpuEngine } from '../cpu-engine.ts';
import { defaultParams } from '../../methods/defaults.ts';
import { mergeBytes, randomTensor, testParams } from '../../test/tensors.ts';
import type { MethodName } from '../../methods/types.ts';
import type { MergeEngine } from '../contract.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import { tieRowsPerAgent, windowElements } from './plumbing.ts';
import { methodOf } from '../../methods/registry/index.ts';
import { openGpuHarness, withGpuEngine } from '../../test/gpu-harness.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const NUMEL = 50_003;

async function merged(
  engine: MergeEngine,
  input: TensorInput,
  method: MethodName,
  agents: number,
  outDtype: FloatDtype,
): Promise<Uint8Array> {
  return mergeBytes(engine, input, {
    // testParams has values for up to 4 agents; more take the method's defaults.
    params: agents <= 4 ? testParams(method, agents, 7) : defaultParams(method, agents),
    lambdas: Array.from({ length: agents }, (_, t) => 1 + t / 8),
    outDtype,
  });
}

const cases: { method: MethodName; agents: number; dtype: FloatDtype }[] = [
  { method: 'ramplus', agents: 16, dtype: 'F32' },
  { method: 'ties', agents: 3, dtype: 'BF16' },
  { method: 'dare_ties', agents: 4, dtype: 'F16' },
  { method: 'breadcrumbs_ties', agents: 3, dtype: 'BF16' },
];

describe.skipIf(!harness)(`windows sized by a memory budget ${opened.skip ?? ''}`, () => {
  for (const { method, agents, dtype } of cases) {
    it(`${method}, ${agents} agents, ${dtype}: a tiny budget gives the default budget's bytes`, async () => {
      const tensor = randomTensor({
        name: 'model.layers.0.mlp.up_proj.weight',
        dtype,
        numel: NUMEL,
        agents,
        seed: agents,
      });
      const bytes = dtypeBits(dtype) / 8;
      const budget = 64 * 1024 * agents;
      const limits = harness!.device.limits;
      const window = windowElements({
        agents,
        inBytes: bytes,
        outBytes: bytes,
        tieRows: tieRowsPerAgent(methodOf(method).plan),
        maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
        maxBufferSize: limits.maxBufferSize,
        maxComputeWorkgroupsPerDimension: limits.maxComputeWorkgroupsPerDimension,
        maxWindowElements: 2 ** 23,
        memoryBudget: budget,
      });
      // The budget really cuts the tensor into many windows.
      expect(NUMEL / window).toBeGreaterThan(8);
      const run = (memoryBudget?: number): Promise<Uint8Array> =>
        withGpuEngine(
          must(harness, 'the GPU harness'),
          { agents, ...(memoryBudget === undefined ? {} : { memoryBudget }) },
          (gpu) => merged(gpu, tensor.input, method, agents, dtype),
        );
      const tiny = await run(budget);
      const whole = await run();
      expect(tiny.length).toBe(NUMEL * bytes);
      expect(Buffer.compare(Buffer.from(tiny), Buffer.from(whole))).toBe(0);
      // Against the CPU engine (f64): within an ulp of the output dtype, plus f32 rounding at the
      // magnitude of the inputs (the GPU computes in f32, so τ and sums carry its error).
      const want = decodeFloats(
        dtype,
        await merged(createCpuEngine({ agents }), tensor.input, method, agents, dtype),
        NUMEL,
      );
      const got = decodeFloats(dtype, tiny, NUMEL);
      const ulp = dtype === 'F32' ? 2 ** -23 : dtype === 'BF16' ? 2 ** -7 : 2 ** -10;
      const { base, agents: tuned } = tensor.values;
      const off: string[] = [];
      want.forEach((w, i) => {
        const magnitude = Math.max(Math.abs(base[i]!), ...tuned.map((a) => Math.abs(a[i]!)));
        const tolerance = ulp * Math.max(Math.abs(w), 2 ** -14) + agents * 2 ** -23 * magnitude;
        if (!(Math.abs(got[i]! - w) <= tolerance)) off.push(`[${i}] ${got[i]} ≠ ${w}`);
      });
      expect(off.slice(0, 5)).toEqual([]);
      expect(got.some((v) => v !== 0)).toBe(true);
    });
  }
});

// Branch counts of what a sparsifying merge kept, on the GPU (shaders/common/branches.wgsl in the TIES
// and task-arithmetic kernels): equal to the CPU engine's, exactly, on fresh inputs whose |τ| ties put
// every threshold inside long runs of equal magnitudes, in one window and many (an odd count, so the
// last pair has one lane); and the merged bytes equal those of the same merge without counting.
import { afterAll, describe, expect, it } from 'vitest';
import { encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { must } from '../io/checked.ts';
import {
  emptyBranchCounts,
  type BranchCounts,
  type MergeEngine,
  type TensorInput,
} from '../methods/merge-types.ts';
import { mergeBytes, tensorInput } from '../methods/test-tensors.ts';
import type { MethodParams } from '../methods/types.ts';
import { BRANCH_AGENTS, branchParams, SPARSIFYING, tiedModels } from '../test/branch-oracle.ts';
import { openGpuHarness, withGpuEngine } from '../test/gpu-harness.ts';
import { createCpuEngine } from './cpu-engine.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const NUMEL = 40_001;

async function counted(
  engine: MergeEngine,
  input: TensorInput,
  params: MethodParams,
  branches?: BranchCounts,
): Promise<Uint8Array> {
  return mergeBytes(engine, input, { params, lambdas: [1, 1, 1], outDtype: 'F32', branches });
}

describe.skipIf(!harness)(`branch counts on the GPU ${opened.skip ?? ''}`, () => {
  const cases: { dtype: FloatDtype; window?: number }[] = [
    { dtype: 'BF16' },
    { dtype: 'BF16', window: 6_000 },
    { dtype: 'F32', window: 9_000 },
  ];
  SPARSIFYING.forEach((method, m) =>
    cases.forEach(({ dtype, window }, k) =>
      it(`${method}: the CPU engine's counts (${dtype}, ${window ? 'many windows' : 'one window'})`, async () => {
        const seed = 100 + 10 * m + k;
        const models = tiedModels(seed, NUMEL, BRANCH_AGENTS);
        const input = tensorInput(
          'model.layers.0.mlp.up_proj.weight',
          dtype,
          models.map((v) => encodeFloats(dtype, v)),
        );
        const params = branchParams(method, seed);
        const want = emptyBranchCounts(BRANCH_AGENTS);
        await counted(
          createCpuEngine({ agents: BRANCH_AGENTS, maxWindowElements: window }),
          input,
          params,
          want,
        );
        // Every class must occur, or equality proves little.
        expect(want.counts.every((c) => c > 0)).toBe(true);
        expect(want.unique.every((c) => c > 0)).toBe(true);
        expect(want.signConflicts).toBeGreaterThan(0);
        const got = emptyBranchCounts(BRANCH_AGENTS);
        const [withCounts, without] = await withGpuEngine(
          must(harness, 'the GPU harness'),
          { agents: BRANCH_AGENTS, maxWindowElements: window },
          async (gpu) => [await counted(gpu, input, params, got), await counted(gpu, input, params)],
        );
        expect(got).toEqual(want);
        expect(Buffer.from(withCounts).equals(Buffer.from(without))).toBe(true);
      }),
    ),
  );
});

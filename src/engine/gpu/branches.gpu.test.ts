// Branch counts of what a sparsifying merge kept, on the GPU (shaders/common/branches.wgsl in the TIES
// and task-arithmetic kernels): equal to the CPU engine's, exactly, on fresh inputs whose |τ| ties put
// every threshold inside long runs of equal magnitudes, in one window and many (an odd count, so the
// last pair has one lane), for 3 agents and for agent counts on either side of the kernel's ways of
// keeping its counts (N ≤ 4, N ≤ 8, more); and the merged bytes equal those of the same merge without
// counting.
import { afterAll, describe, expect, it } from 'vitest';
import { encodeFloats, type FloatDtype } from '../../format/dtype.ts';
import { must } from '../../io/checked.ts';
import { emptyBranchCounts, type BranchCounts, type TensorInput } from '../../methods/tensors.ts';
import { type MergeEngine } from '../contract.ts';
import { defaultParams } from '../../methods/defaults.ts';
import { mergeBytes } from '../../test/tensors.ts';
import { tensorInput } from '../../methods/tensors.ts';
import type { MethodParams } from '../../methods/types.ts';
import { BRANCH_AGENTS, branchParams, SPARSIFYING, tiedModels } from '../../test/branch-oracle.ts';
import { openGpuHarness, withGpuEngine } from '../../test/gpu-harness.ts';
import { createCpuEngine } from '../cpu-engine.ts';

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
  const lambdas = params.weights.map(() => 1);
  return mergeBytes(engine, input, { params, lambdas, outDtype: 'F32', branches });
}

/** The CPU engine's counts and the GPU engine's, and the GPU's merged bytes with and without counting. */
async function bothEngines(
  input: TensorInput,
  params: MethodParams,
  agents: number,
  window?: number,
): Promise<{ want: BranchCounts; got: BranchCounts; withCounts: Uint8Array; without: Uint8Array }> {
  const want = emptyBranchCounts(agents);
  await counted(createCpuEngine({ agents, maxWindowElements: window }), input, params, want);
  const got = emptyBranchCounts(agents);
  const [withCounts, without] = await withGpuEngine(
    must(harness, 'the GPU harness'),
    { agents, maxWindowElements: window },
    async (gpu) => [await counted(gpu, input, params, got), await counted(gpu, input, params)],
  );
  return { want, got, withCounts, without };
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
        const { want, got, withCounts, without } = await bothEngines(input, params, BRANCH_AGENTS, window);
        // Every class must occur, or equality proves little.
        expect(want.counts.every((c) => c > 0)).toBe(true);
        expect(want.unique.every((c) => c > 0)).toBe(true);
        expect(want.signConflicts).toBeGreaterThan(0);
        expect(got).toEqual(want);
        expect(Buffer.from(withCounts).equals(Buffer.from(without))).toBe(true);
      }),
    ),
  );
});

describe.skipIf(!harness)(`branch counts on the GPU for 1 to 32 agents ${opened.skip ?? ''}`, () => {
  const dense = [0.5, 0.3, 0.8];
  const cases: { method: 'ties' | 'dare_linear'; agents: number; densities?: number[] }[] = [
    { method: 'ties', agents: 1 },
    { method: 'dare_linear', agents: 1 },
    { method: 'ties', agents: 4 },
    { method: 'ties', agents: 5 },
    { method: 'ties', agents: 9 },
    { method: 'dare_linear', agents: 9 },
    // DARE's independent drops, sparse enough that every agent is sometimes the only one summed (its
    // field in the last words).
    { method: 'dare_linear', agents: 32, densities: [0.04, 0.02, 0.06] },
  ];
  cases.forEach(({ method, agents, densities = dense }, k) =>
    it(`${method}, ${agents} agents: the CPU engine's counts over many windows`, async () => {
      const seed = 300 + k;
      const numel = 20_001;
      const models = tiedModels(seed, numel, agents);
      const input = tensorInput(
        'model.layers.0.mlp.up_proj.weight',
        'BF16',
        models.map((v) => encodeFloats('BF16', v)),
      );
      // A negative weight (its w·τ̂ votes against its τ̂) and densities that cut runs of tied |τ|.
      const params: MethodParams = {
        ...defaultParams(method, agents),
        weights: models.slice(1).map((_, t) => [1, -0.5, 0.75][t % 3] ?? 1),
        density: models.slice(1).map((_, t) => densities[t % 3] ?? 1),
        seed,
      };
      const { want, got, withCounts, without } = await bothEngines(input, params, agents, 3_001);
      // Classes of one agent and, with several, of two and three, and conflicts: equality proves something.
      expect(want.unique.every((c) => c > 0)).toBe(true);
      if (agents > 1) {
        expect(want.counts.slice(0, 4).every((c) => c > 0)).toBe(true);
        expect(want.signConflicts).toBeGreaterThan(0);
      }
      expect(got).toEqual(want);
      expect(Buffer.from(withCounts).equals(Buffer.from(without))).toBe(true);
    }),
  );
});

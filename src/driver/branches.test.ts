// Branch counts of what a sparsifying merge kept, on the CPU: the CPU engine (radix select and DARE
// over windows) and the f64 reference (whole tensor) count what an oracle counts from the reference's
// sparsified τ̂ (src/test/branch-oracle.ts), on inputs whose |τ| ties put every threshold inside long
// runs of equal magnitudes; merges that do not sparsify leave the counts alone.
import { describe, expect, it } from 'vitest';
import { encodeFloats } from '../format/dtype.ts';
import { defaultParams } from '../methods/defaults.ts';
import { emptyBranchCounts, type BranchCounts } from '../methods/tensors.ts';
import { bandTaus, dareTaus, referenceBranches, topKTaus, type TensorValues } from '../methods/reference.ts';
import { methodOf } from '../methods/registry/index.ts';
import { mergeBytes } from '../test/tensors.ts';
import { tensorInput } from '../methods/tensors.ts';
import type { MethodParams } from '../methods/types.ts';
import {
  BRANCH_AGENTS,
  branchParams,
  oracleBranches,
  SPARSIFYING,
  tiedModels,
} from '../test/branch-oracle.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';

const NUMEL = 30_001;

function oracle(values: TensorValues, params: MethodParams): BranchCounts {
  const { plan } = methodOf(params.method);
  const taus =
    plan.sparsify === 'dare'
      ? dareTaus(values, 0, params)
      : plan.sparsify === 'band'
        ? bandTaus(values, params.density, params.gamma)
        : topKTaus(values, params.density);
  return oracleBranches(taus, params.weights, plan.combine === 'ties');
}

const AGENTS = BRANCH_AGENTS;

describe('branch counts on the CPU', () => {
  const models = tiedModels(11, NUMEL, AGENTS);
  const bytes = models.map((m) => encodeFloats('F32', m));
  const values: TensorValues = { name: 'w', dtype: 'F32', base: models[0]!, agents: models.slice(1) };
  const input = tensorInput('w', 'F32', bytes);

  for (const method of SPARSIFYING)
    it(`${method}: the CPU engine over windows and the reference count what the merge summed`, async () => {
      const params = branchParams(method, 5);
      const want = oracle(values, params);
      // Every class must occur, or the comparison proves little.
      expect(want.counts.every((c) => c > 0)).toBe(true);
      expect(want.unique.every((c) => c > 0)).toBe(true);
      expect(want.signConflicts).toBeGreaterThan(0);
      expect(want.counts.reduce((a, b) => a + b, 0)).toBe(NUMEL);
      expect(referenceBranches(values, params)).toEqual(want);
      for (const window of [4_000, NUMEL]) {
        const got = emptyBranchCounts(AGENTS);
        await mergeBytes(createCpuEngine({ agents: AGENTS, maxWindowElements: window }), input, {
          params,
          lambdas: [1, 1, 1],
          outDtype: 'F32',
          branches: got,
        });
        expect(got, `window ${window}`).toEqual(want);
      }
    });

  it('merges that do not sparsify τ count nothing (their branches are the statistics)', async () => {
    for (const method of ['ram', 'task_arithmetic', 'linear'] as const) {
      const got = emptyBranchCounts(AGENTS);
      await mergeBytes(createCpuEngine({ agents: AGENTS }), input, {
        params: defaultParams(method, AGENTS),
        lambdas: [1, 1, 1],
        outDtype: 'F32',
        branches: got,
      });
      expect(got).toEqual(emptyBranchCounts(AGENTS));
      expect(referenceBranches(values, defaultParams(method, AGENTS))).toBeNull();
    }
  });
});

// An oracle for the branch counts, written for the tests from the definitions in
// src/driver/merge-branches.ts rather than from the engines: each element's summed agents as a list,
// from the reference's sparsified τ̂ of the whole tensor; and the tied inputs and parameters the
// branch tests share.

import { defaultParams } from '../methods/defaults.ts';
import type { BranchCounts } from '../methods/tensors.ts';
import type { SparseTaus } from '../methods/reference.ts';
import { seededRandom } from '../methods/rng.ts';
import type { MethodName, MethodParams } from '../methods/types.ts';

export const BRANCH_AGENTS = 3;

/** Base on a grid of quarters, each agent moved by k/64, k in −3..3: |τ| takes four values, all exact. */
export function tiedModels(seed: number, numel: number, agents: number): Float64Array[] {
  const random = seededRandom(seed);
  const base = Float64Array.from({ length: numel }, () => Math.floor(random() * 32 - 16) / 4);
  return [
    base,
    ...Array.from({ length: agents }, () => base.map((b) => b + Math.floor(random() * 7 - 3) / 64)),
  ];
}

export const SPARSIFYING: readonly MethodName[] = [
  'ties',
  'dare_ties',
  'dare_linear',
  'breadcrumbs',
  'breadcrumbs_ties',
];

/** Parameters with a negative weight (its w·τ̂ votes against its τ̂) and densities that cut ties. */
export function branchParams(method: MethodName, seed: number): MethodParams {
  const defaults = defaultParams(method, BRANCH_AGENTS);
  return {
    ...defaults,
    weights: [1, -0.5, 0.75],
    density: [0.5, 0.3, 0.8],
    seed,
    ...(defaults.gamma ? { gamma: [0.1, 0.25, 0.05] } : {}),
  };
}

/** The counts of what a merge of `taus` sums, with TIES's election where `consensus`. */
export function oracleBranches(
  taus: SparseTaus,
  weights: readonly number[],
  consensus: boolean,
): BranchCounts {
  const n = taus.votes.length;
  const numel = taus.votes[0]?.length ?? 0;
  const counts = new Array<number>(n + 1).fill(0);
  const unique = new Array<number>(n).fill(0);
  let signConflicts = 0;
  const f32 = new Float32Array(1);
  for (let i = 0; i < numel; i++) {
    // The vote as the GPU forms it: f32 products of the f32 weight and τ̂, summed in agent order in f32.
    let vote = 0;
    const voters: { agent: number; positive: boolean }[] = [];
    for (let t = 0; t < n; t++) {
      f32[0] = weights[t] ?? 0;
      const w = f32[0];
      const x = taus.votes[t]?.[i] ?? 0;
      f32[0] = w * x;
      f32[0] = vote + f32[0];
      vote = f32[0];
      if (x !== 0 && w !== 0 && Number.isFinite(x)) voters.push({ agent: t, positive: w * x > 0 });
    }
    const signs = new Set(voters.map((v) => v.positive));
    if (signs.size === 2) signConflicts++;
    const summed = consensus ? voters.filter((v) => v.positive === vote >= 0) : voters;
    counts[summed.length] = (counts[summed.length] ?? 0) + 1;
    const only = summed.length === 1 ? summed[0] : undefined;
    if (only) unique[only.agent] = (unique[only.agent] ?? 0) + 1;
  }
  return { counts, unique, signConflicts };
}

// How many elements each branch of a merge took, kept in a small JSON file next to the model card so a
// merge reopened from the library can still be compared by branch. Only integers are stored; shares and
// deltas are computed where they are shown.
//
// Two sources, named in the file's `source`:
//
// - `merge`: counted inside the merge, for the methods whose plan sparsifies τ (TIES, DARE-TIES,
//   DARE-linear, Model Breadcrumbs, Breadcrumbs-TIES). Let τ̂_t be agent t's sparsified task vector as
//   the merge holds it (after the top-k, the random drop and rescale, or the band; f32, as the kernels
//   vote) and w_t its weight. Agent t *votes* at element i iff w_t ≠ 0 and τ̂_{t,i} ≠ 0 (and τ̂ is
//   finite: where every model holds the same NaN or ±Inf nothing is merged), on the side of the sign of
//   w_t·τ̂_{t,i}. With a sign election (combine `ties`: γ_i = + iff Σ_t w_t τ̂_{t,i} ≥ 0 in f32) the
//   agents *summed* into element i are the voters on γ_i's side; without one, every voter. Then
//   counts[c] is the number of elements summed from exactly c agents (c = 0..N; 0 = the base kept),
//   unique[t] the elements summed from agent t alone (Σ_t unique[t] = counts[1]), and signConflicts the
//   elements with voters on both sides (under an election, exactly those where it dropped someone).
//   `epsilon` is the merge's ε, which these methods do not use.
// - `statistics`: the classes of the statistics pass at `epsilon` (|τ| > ε: unchanged / unique to t /
//   shared / shared with contributors of both signs), for RAM and the dense merges (RAM, RAM+, linear,
//   task arithmetic). For RAM's family they are exactly what the merge did (it averages the agents with
//   |τ| > ε); for linear and task arithmetic they describe the inputs, every agent being summed. Counting
//   in these kernels too would put per-element atomics into the fastest merges for numbers the
//   statistics (computed anyway for RAM+ and cached by the studio) already give.
//
// A file without `source` (written before it existed) holds statistics.
import type { BranchCounts } from '../methods/tensors.ts';
import type { ModelStats } from '../methods/stats.ts';

export const BRANCHES_FILE = 'merge_branches.json';

export type BranchSource = 'merge' | 'statistics';

export interface MergeBranches {
  /** Where the counts come from (see above). */
  source: BranchSource;
  /** The ε the statistics were counted at (`statistics`), or the merge's ε (`merge`). */
  epsilon: number;
  agents: string[];
  numel: number;
  /** counts[c]: elements changed (statistics) or summed (merge) by exactly c agents. */
  counts: number[];
  /** Per agent: elements only it changed (statistics) or only it was summed into (merge). */
  unique: number[];
  /** Elements whose contributors (statistics) or voters (merge) disagree in sign. */
  signConflicts: number;
}

/** Branches from the statistics a merge used. */
export function mergeBranches(epsilon: number, agents: readonly string[], totals: ModelStats): MergeBranches {
  return {
    source: 'statistics',
    epsilon,
    agents: [...agents],
    numel: totals.numel,
    counts: [...totals.counts],
    unique: [...totals.unique],
    signConflicts: totals.signConflicts,
  };
}

/** Branches counted inside a sparsifying merge, summed over its tensors. */
export function keptBranches(epsilon: number, agents: readonly string[], kept: BranchCounts): MergeBranches {
  return {
    source: 'merge',
    epsilon,
    agents: [...agents],
    numel: kept.counts.reduce((a, b) => a + b, 0),
    counts: [...kept.counts],
    unique: [...kept.unique],
    signConflicts: kept.signConflicts,
  };
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const counts = (value: unknown): value is number[] => Array.isArray(value) && value.every(isCount);

/** The file's branches, or null when it is missing or not of this shape (a folder from elsewhere). */
export function parseBranches(text: string | null): MergeBranches | null {
  if (text === null) return null;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof json !== 'object' || json === null) return null;
  const {
    source = 'statistics',
    epsilon,
    agents,
    numel,
    counts: byCount,
    unique,
    signConflicts,
  } = json as Record<string, unknown>;
  if (
    (source !== 'merge' && source !== 'statistics') ||
    typeof epsilon !== 'number' ||
    !Array.isArray(agents) ||
    !agents.every((a) => typeof a === 'string') ||
    !isCount(numel) ||
    !counts(byCount) ||
    !counts(unique) ||
    unique.length !== agents.length ||
    !isCount(signConflicts)
  ) {
    return null;
  }
  return { source, epsilon, agents, numel, counts: byCount, unique, signConflicts };
}

// How many elements each branch of a merge took, from the statistics the merge used, kept in a small
// JSON file next to the model card so a merge reopened from the library can still be compared by
// branch. Only integers are stored; shares and deltas are computed where they are shown.
import type { ModelStats } from '../methods/stats.ts';

export const BRANCHES_FILE = 'merge_branches.json';

export interface MergeBranches {
  /** The ε the statistics were counted at. */
  epsilon: number;
  agents: string[];
  numel: number;
  /** counts[c]: elements changed by exactly c agents (c = 0 unchanged, 1 unique, ≥ 2 shared). */
  counts: number[];
  /** Per agent: elements only it changed. */
  unique: number[];
  /** Shared elements whose contributors disagree in sign. */
  signConflicts: number;
}

export function mergeBranches(epsilon: number, agents: readonly string[], totals: ModelStats): MergeBranches {
  return {
    epsilon,
    agents: [...agents],
    numel: totals.numel,
    counts: [...totals.counts],
    unique: [...totals.unique],
    signConflicts: totals.signConflicts,
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
  const { epsilon, agents, numel, counts: byCount, unique, signConflicts } = json as Record<string, unknown>;
  if (
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
  return { epsilon, agents, numel, counts: byCount, unique, signConflicts };
}

// Views of the statistics pass for the charts: tensors grouped into layers (integer counts summed
// first, so layers add up to the model), pairwise overlaps where the counts determine them, sign
// conflict rates and the |τ| magnitude histogram.
import type { TensorStats } from '../../engine/types.ts';
import { MAGNITUDE_BINS, magnitudeBin, sumStats, type ModelStats } from '../../methods/stats.ts';

const NUMBERED = /(?:^|\.)(layers|layer|h|blocks|block)\.(\d+)\./;

/** `model.layers.3.mlp.up_proj.weight` → `layers.3`; an unnumbered tensor groups by its module (`head`). */
export function layerOf(name: string): string {
  const numbered = NUMBERED.exec(name);
  if (numbered) return `${numbered[1]}.${numbered[2]}`;
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : name;
}

const collator = new Intl.Collator('en', { numeric: true });

export interface LayerStats {
  layer: string;
  tensors: number;
  stats: ModelStats;
}

/** Per-layer totals, in natural name order (layers.2 before layers.10). */
export function layerStats(tensors: readonly TensorStats[], agents: number): LayerStats[] {
  const groups = new Map<string, TensorStats[]>();
  for (const t of tensors) {
    const key = layerOf(t.name);
    const group = groups.get(key);
    if (group) group.push(t);
    else groups.set(key, [t]);
  }
  return [...groups.keys()].sort(collator.compare).map((layer) => {
    const members = groups.get(layer) ?? [];
    return { layer, tensors: members.length, stats: sumStats(members, agents) };
  });
}

/** Elements changed by two or more agents. */
export function sharedElements(stats: Pick<ModelStats, 'counts'>): number {
  return stats.counts.slice(2).reduce((a, b) => a + b, 0);
}

/** Share of shared elements whose contributors disagree in sign; 0 when nothing is shared. */
export function signConflictRate(stats: Pick<ModelStats, 'counts' | 'signConflicts'>): number {
  const shared = sharedElements(stats);
  return shared === 0 ? 0 : stats.signConflicts / shared;
}

/**
 * |changed by a ∩ changed by b| for every pair, or null: per-agent "exactly k others" counts fix the
 * pairs only for N ≤ 3 (N = 3: each agent's k = 1 count is the sum of its two exactly-two pairs).
 */
export function pairwiseOverlap(
  stats: Pick<ModelStats, 'agents' | 'overlap' | 'counts' | 'changed'>,
): number[][] | null {
  const n = stats.agents;
  if (n < 2 || n > 3) return null;
  const matrix = Array.from({ length: n }, (_, a) =>
    Array.from({ length: n }, (_, b) => (a === b ? (stats.changed[a] ?? 0) : 0)),
  );
  if (n === 2) {
    const both = stats.counts[2] ?? 0;
    matrix[0]![1] = both;
    matrix[1]![0] = both;
    return matrix;
  }
  const all = stats.counts[3] ?? 0;
  const one = (t: number): number => stats.overlap[t]?.[1] ?? 0;
  for (let a = 0; a < 3; a++)
    for (let b = a + 1; b < 3; b++) {
      const c = 3 - a - b;
      const exactlyTwo = (one(a) + one(b) - one(c)) / 2;
      matrix[a]![b] = exactlyTwo + all;
      matrix[b]![a] = exactlyTwo + all;
    }
  return matrix;
}

/** Label of a magnitude bin, e.g. "2^-7"; the end bins say "<" and "≥". */
export function binLabel(index: number): string {
  const bin = MAGNITUDE_BINS[index];
  if (!bin) return '';
  if (index === 0) return `<2^${bin.exponent + 1}`;
  if (index === MAGNITUDE_BINS.length - 1) return `≥2^${bin.exponent}`;
  return `2^${bin.exponent}`;
}

/** The magnitude bin that holds ε, where the changed/unchanged threshold falls. */
export function epsilonBin(epsilon: number): number {
  return magnitudeBin(epsilon);
}

/** The bins from the first to the last non-empty one over all agents (plus ε's bin). */
export function magnitudeRange(stats: Pick<ModelStats, 'magnitude'>, epsilon: number): [number, number] {
  let low = epsilonBin(epsilon);
  let high = low;
  for (const row of stats.magnitude)
    row.forEach((count, bin) => {
      if (count > 0) {
        low = Math.min(low, bin);
        high = Math.max(high, bin);
      }
    });
  return [low, high];
}

/** The share of an agent's changes at most one ulp of the base above which a plain re-save is likely. */
export const RESAVE_SHARE = 0.95;

/** Per agent: nearly every change is one ulp, the fingerprint of a dtype round trip, not training. */
export function resaveSuspects(stats: Pick<ModelStats, 'changed' | 'oneUlp'>): boolean[] {
  return stats.changed.map((changed, t) => changed > 0 && (stats.oneUlp[t] ?? 0) / changed >= RESAVE_SHARE);
}

/** `part / whole` as a percentage with `digits` decimals; "0" for an empty whole. */
export function percent(part: number, whole: number, digits = 1): string {
  return whole === 0 ? '0' : ((100 * part) / whole).toFixed(digits);
}

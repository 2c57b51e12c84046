// Change statistics: the |τ| magnitude bins, summing per-tensor integer counts into model totals, and
// the per-agent λ of the RAM family (SPEC.md) derived from them.

import type { FloatDtype } from '../format/dtype.ts';
import type { TensorStats } from './tensors.ts';
import type { MethodName } from './types.ts';
import { methodOf } from './registry/index.ts';
import { f32Bits } from './float32.ts';

export const MAGNITUDE_MIN_EXPONENT = -40;
export const MAGNITUDE_MAX_EXPONENT = 8;

/** Bin of changed elements with floor(log2 |τ|) = exponent; the end bins also hold everything beyond. */
export interface MagnitudeBin {
  exponent: number;
  /** Inclusive lower edge of |τ| (0 for the first bin). */
  lower: number;
  /** Exclusive upper edge of |τ| (Infinity for the last bin). */
  upper: number;
}

/**
 * 49 bins: |τ| < 2^-39 (first), [2^e, 2^(e+1)) for e = -39..7, and |τ| ≥ 2^8 (last). With ε = 1e-5
 * (≈ 2^-16.6) the low bins fill only when ε is lowered, e.g. to 0 for bf16 re-save fingerprints.
 */
export const MAGNITUDE_BINS: readonly MagnitudeBin[] = Array.from(
  { length: MAGNITUDE_MAX_EXPONENT - MAGNITUDE_MIN_EXPONENT + 1 },
  (_, b) => {
    const exponent = MAGNITUDE_MIN_EXPONENT + b;
    return {
      exponent,
      lower: exponent === MAGNITUDE_MIN_EXPONENT ? 0 : 2 ** exponent,
      upper: exponent === MAGNITUDE_MAX_EXPONENT ? Infinity : 2 ** (exponent + 1),
    };
  },
);

/** Bin index of an f32 |τ| (its exponent field, clamped; f32 subnormals fall in the first bin). */
export function magnitudeBin(tau: number): number {
  const exponent = ((f32Bits(tau) >>> 23) & 0xff) - 127;
  return (
    Math.min(Math.max(exponent, MAGNITUDE_MIN_EXPONENT), MAGNITUDE_MAX_EXPONENT) - MAGNITUDE_MIN_EXPONENT
  );
}

/** Most agents for which the statistics count pairs (the GPU's per-set counters reach 2^8 sets). */
export const PAIRS_MAX_AGENTS = 8;

/** All-zero statistics of a tensor, to accumulate windows into (with pairs for N ≤ PAIRS_MAX_AGENTS). */
export function emptyTensorStats(
  name: string,
  dtype: FloatDtype,
  numel: number,
  agents: number,
): TensorStats {
  const perAgent = (length: number): number[][] =>
    Array.from({ length: agents }, () => new Array<number>(length).fill(0));
  return {
    name,
    dtype,
    numel,
    counts: new Array<number>(agents + 1).fill(0),
    nonFinite: 0,
    nonFiniteModels: new Array<number>(agents + 1).fill(0),
    overlap: perAgent(agents),
    changed: new Array<number>(agents).fill(0),
    unique: new Array<number>(agents).fill(0),
    signConflicts: 0,
    magnitude: perAgent(MAGNITUDE_BINS.length),
    oneUlp: new Array<number>(agents).fill(0),
    ...(agents <= PAIRS_MAX_AGENTS
      ? { pairs: perAgent(agents), sets: new Array<number>(2 ** agents).fill(0) }
      : {}),
  };
}

/** Fills the derived fields (changed, unique, the pairs' diagonal) from overlap. */
export function deriveTensorStats(stats: TensorStats): TensorStats {
  stats.changed = stats.overlap.map((row) => row.reduce((a, b) => a + b, 0));
  stats.unique = stats.overlap.map((row) => row[0] ?? 0);
  stats.pairs?.forEach((row, t) => (row[t] = stats.changed[t] ?? 0));
  return stats;
}

export interface ModelStats {
  agents: number;
  tensors: number;
  numel: number;
  /** counts[c]: elements changed by exactly c agents. */
  counts: number[];
  /** Elements not classified because their bits differ and hold NaN or ±Inf (TensorStats.nonFinite). */
  nonFinite: number;
  /** Per model, base first: of those, the elements where it holds NaN or ±Inf. */
  nonFiniteModels: number[];
  changed: number[];
  unique: number[];
  /** changed − unique. */
  shared: number[];
  overlap: number[][];
  /** shared / unique; +Infinity when unique = 0 < shared, 0 when the agent changed nothing. */
  rho: number[];
  signConflicts: number;
  magnitude: number[][];
  oneUlp: number[];
  /** pairs[t][u]: elements changed by both t and u; present when every tensor's statistics have them. */
  pairs?: number[][];
  /** sets[m]: elements changed by exactly the agents of bitmask m; present when every tensor's statistics have them. */
  sets?: number[];
}

/** Sums per-tensor integer statistics (integers first; ratios only at the end). */
export function sumStats(
  tensors: readonly TensorStats[],
  agents = tensors[0]?.changed.length ?? 0,
): ModelStats {
  const zeros = (length: number): number[] => new Array<number>(length).fill(0);
  const total: ModelStats = {
    agents,
    tensors: tensors.length,
    numel: 0,
    counts: zeros(agents + 1),
    nonFinite: 0,
    nonFiniteModels: zeros(agents + 1),
    changed: zeros(agents),
    unique: zeros(agents),
    shared: zeros(agents),
    overlap: Array.from({ length: agents }, () => zeros(agents)),
    rho: zeros(agents),
    signConflicts: 0,
    magnitude: Array.from({ length: agents }, () => zeros(MAGNITUDE_BINS.length)),
    oneUlp: zeros(agents),
  };
  const pairs = tensors.every((s) => s.pairs) && agents <= PAIRS_MAX_AGENTS;
  if (pairs) total.pairs = Array.from({ length: agents }, () => zeros(agents));
  if (tensors.every((s) => s.sets) && agents <= PAIRS_MAX_AGENTS) total.sets = zeros(2 ** agents);
  const add = (into: number[], from: readonly number[]): void => {
    if (from.length !== into.length) throw new RangeError(`statistics for ${agents} agents expected`);
    for (let i = 0; i < into.length; i++) into[i]! += from[i]!;
  };
  for (const s of tensors) {
    total.numel += s.numel;
    total.signConflicts += s.signConflicts;
    total.nonFinite += s.nonFinite;
    add(total.counts, s.counts);
    add(total.nonFiniteModels, s.nonFiniteModels);
    add(total.oneUlp, s.oneUlp);
    if (total.sets) add(total.sets, s.sets ?? []);
    for (let t = 0; t < agents; t++) {
      add(total.overlap[t]!, s.overlap[t] ?? []);
      add(total.magnitude[t]!, s.magnitude[t] ?? []);
      if (total.pairs) add(total.pairs[t]!, s.pairs?.[t] ?? []);
    }
  }
  for (let t = 0; t < agents; t++) {
    const changed = total.overlap[t]!.reduce((a, b) => a + b, 0);
    const unique = total.overlap[t]![0] ?? 0;
    total.changed[t] = changed;
    total.unique[t] = unique;
    total.shared[t] = changed - unique;
    total.rho[t] = changed === 0 ? 0 : unique === 0 ? Infinity : (changed - unique) / unique;
  }
  return total;
}

/**
 * λ_t per agent from global statistics (SPEC.md), by the method's descriptor (`ramplus` 1 + r·clip(ρ, 0, α)
 * with ρ = +∞ clipped to α, `ramplus_soft` 1 + r·shared/changed); 1 when the agent changed nothing and
 * for every method without a global λ (`ramplus_tl` computes its λ per tensor).
 */
export function ramLambdas(stats: ModelStats, method: MethodName, r: number, alpha: number): number[] {
  const { globalLambda } = methodOf(method);
  return stats.changed.map((changed, t) =>
    changed === 0 || !globalLambda ? 1 : globalLambda(stats, t, r, alpha),
  );
}

/** What tensor-local RAM+'s λ reads of one tensor: each agent's changed and unique element counts. */
export interface AgentChanges {
  changed: number[];
  unique: number[];
}

/** mergekit `ramplus_tl`: λ_{t,T} = 1 + r·clip(shared / max(unique, ε), 0, α) from one tensor's counts. */
export function tensorLocalLambdas(stats: TensorStats, r: number, alpha: number, epsilon: number): number[] {
  return localLambdas(
    {
      changed: stats.overlap.map((row) => row.reduce((a, b) => a + b, 0)),
      unique: stats.overlap.map((row) => row[0] ?? 0),
    },
    r,
    alpha,
    epsilon,
  );
}

/** tensorLocalLambdas from the per-agent counts alone (the GPU's counting pass before the merge). */
export function localLambdas(counts: AgentChanges, r: number, alpha: number, epsilon: number): number[] {
  return counts.changed.map((changed, t) => {
    const unique = counts.unique[t] ?? 0;
    const shared = changed - unique;
    // shared = 0 guards 0/0 when ε = 0; a positive shared over unique = 0 is +∞, clipped to α.
    const rho = shared === 0 ? 0 : shared / Math.max(unique, epsilon);
    return 1 + r * Math.min(Math.max(rho, 0), alpha);
  });
}

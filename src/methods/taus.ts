// Each agent's τ of a tensor (or a window of it) as the sparsifiers leave it: dense, DARE's seeded
// drop, the top-k by |τ| of TIES and Model Breadcrumbs. The values merged in f64 and, beside them, the
// f32 values the GPU holds for TIES's sign vote. The dispatch by a plan's `sparsify` is sparsifiers.ts's.

import type { FloatDtype } from '../format/dtype.ts';
import { taskVector, tauKey } from './float32.ts';
import { dareHash, dareKeepBelow, dareKept, dareScale, fnv1a32 } from './rng.ts';
import { topKCount } from './select.ts';
import { bandCounts, DEFAULT_GAMMA } from './band.ts';

/** Decoded values of one tensor (or one window of it): the base and the N agents. */
export interface TensorValues {
  name: string;
  dtype: FloatDtype;
  base: Float64Array;
  agents: readonly Float64Array[];
  /**
   * The stored bit patterns, base first (u16 for 16-bit dtypes): they tell NaN payloads apart. Without
   * them the f32 bits of the values are compared.
   */
  bits?: readonly ArrayLike<number>[];
  /** The tensor's shape, where a sparsifier ranks by rows; absent: one row of every element. */
  shape?: readonly number[];
}

/** Per agent, the sparsified τ̂ as merged (f64) and as the GPU holds it for the sign vote (f32). */
export interface SparseTaus {
  values: Float64Array[];
  votes: Float32Array[];
}

/** What DARE's drop reads (MethodParams has it all). */
export interface DareParams {
  density: readonly number[];
  seed: number;
  /** Per agent, this tensor's factor in place of 1/density. */
  dareScales?: readonly number[];
}

/** Every agent's f32 τ, unsparsified. */
export function denseTaus(v: TensorValues): SparseTaus {
  const votes = v.agents.map((agent) => Float32Array.from(agent, (x, i) => taskVector(x, v.base[i]!)));
  return { values: votes.map((tau) => Float64Array.from(tau)), votes };
}

/** DARE: keep each entry iff its hash draw is under density, rescale kept entries (1/density unless `dareScales`). */
export function dareDrop(v: TensorValues, start: number, params: DareParams): SparseTaus {
  const nameHash = fnv1a32(v.name);
  const dense = denseTaus(v);
  dense.values.forEach((values, t) => {
    const density = params.density[t]!;
    const keepBelow = dareKeepBelow(density);
    const scale = params.dareScales?.[t] ?? dareScale(density);
    const gpuScale = Math.fround(scale);
    const votes = dense.votes[t]!;
    for (let i = 0; i < values.length; i++) {
      const kept = dareKept(dareHash(params.seed, nameHash, t, start + i), keepBelow);
      values[i] = kept ? values[i]! * scale : 0;
      votes[i] = kept ? votes[i]! * gpuScale : 0;
    }
  });
  return dense;
}

/**
 * Per agent, the entries of ranks [from, to) in the order larger |τ| first (by f32 bits), equal
 * magnitudes lowest index first; everything else 0.
 */
function rankedTaus(v: TensorValues, band: (t: number, n: number) => [number, number]): SparseTaus {
  const dense = denseTaus(v);
  const n = v.base.length;
  dense.votes.forEach((tau, t) => {
    const [from, to] = band(t, n);
    const keys = Uint32Array.from(tau, (_, i) => tauKey(v.agents[t]![i]!, v.base[i]!));
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => keys[b]! - keys[a]! || a - b);
    const keep = new Uint8Array(n);
    for (const i of order.slice(from, to)) keep[i] = 1;
    for (let i = 0; i < n; i++) {
      if (keep[i]) continue;
      tau[i] = 0;
      dense.values[t]![i] = 0;
    }
  });
  return dense;
}

/**
 * TIES sparsification of a whole tensor: per agent the k = floor(density·numel) largest |τ| (by f32
 * bits), equal magnitudes taken lowest index first; everything else 0.
 */
export function topKTaus(v: TensorValues, densities: readonly number[]): SparseTaus {
  return rankedTaus(v, (t, n) => [0, topKCount(densities[t]!, n)]);
}

/**
 * Model Breadcrumbs' sparsification of a whole tensor (bandCounts): per agent, in the order of
 * topKTaus, the `kept` entries after the `outliers` first; everything else 0.
 */
export function bandTaus(
  v: TensorValues,
  densities: readonly number[],
  gammas: readonly number[] | undefined,
): SparseTaus {
  return rankedTaus(v, (t, n) => {
    const { outliers, kept } = bandCounts(densities[t]!, gammas?.[t] ?? DEFAULT_GAMMA, n);
    return [outliers, outliers + kept];
  });
}

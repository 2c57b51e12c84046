// DELLA's MagPrune (mergekit `della_magprune`, arXiv 2406.11617): per rank group of τ (a row of a 2-D
// tensor, the whole of a 1-D one) each entry is kept with a probability that grows with the rank of its
// |τ|, p = (density − ε) + rank_norm·2ε, by the seeded draw DARE uses (rng.ts), so the CPU and the GPU
// keep the same entries. Shared by the CPU reference, the CPU engine and the GPU engine (which passes
// the integer thresholds below to shaders/della_mask.wgsl).

import { taskVector, tauKey } from './float32.ts';
import { dareHash, dareKept, fnv1a32 } from './rng.ts';
import type { DareRescale, ParamSpec } from './param-spec.ts';

/** The parameter only DELLA reads; PARAM_SPECS (params.ts) takes it through the sparsifier table. */
export const DELLA_PARAMS = {
  dellaEpsilon: {
    kind: 'number',
    scope: 'agent',
    optional: true,
    default: 0.15,
    // density ± ε inside (0, 1) needs ε < min(density, 1 − density) ≤ 0.5.
    range: { min: 0, max: 0.5, maxOpen: true },
    help:
      'DELLA: per agent, the spread of the keep probabilities: density − ε for the smallest |τ| of a row, ' +
      'density + ε for the largest (mergekit’s per-model epsilon, default 0.15; not RAM’s ε). ' +
      'density ± ε must lie inside (0, 1).',
    label: 'ε (DELLA)',
    mergekit: { key: 'epsilon' },
    flag: 'della-epsilon',
    perTensor: true,
    card: 'ε (DELLA)',
  },
} as const satisfies Record<string, ParamSpec>;

/** mergekit's per-model `epsilon` of `della` and `della_linear` where a recipe does not say. */
export const DEFAULT_DELLA_EPSILON = DELLA_PARAMS.dellaEpsilon.default;

/** Longest rank group: rank·span stays below 2^53 (exact in f64) and rank below 2^32 on the GPU. */
export const MAX_DELLA_GROUP = 2 ** 29;

const UNIT = 2 ** 24;

/**
 * The rank groups of a tensor, as mergekit's `argsort(dim=1)` forms them (a 1-D tensor unsqueezed to
 * one row): element o·length·inner + j·inner + k is rank j of group (o, k). 2-D: rows (inner 1);
 * ≥ 3-D: along dimension 1. A `slab` (length·inner elements) holds whole groups, so a window of whole
 * slabs ranks exactly as the whole tensor does.
 */
export interface DellaGroups {
  length: number;
  inner: number;
  slab: number;
}

/** The groups of a tensor of this shape; without a shape (or for 0-D and 1-D) one group of numel. */
export function dellaGroups(shape: readonly number[] | undefined, numel: number): DellaGroups {
  const groups =
    shape === undefined || shape.length < 2
      ? { length: numel, inner: 1 }
      : { length: shape[1]!, inner: shape.slice(2).reduce((a, b) => a * b, 1) };
  if (groups.length > MAX_DELLA_GROUP)
    throw new RangeError(
      `DELLA ranks |τ| in groups of at most 2^29 elements; this tensor's groups hold ${groups.length}`,
    );
  return { ...groups, slab: groups.length * groups.inner };
}

/**
 * Why mergekit would refuse agent t's density and ε (its `della_magprune` raises unless density ± ε
 * is inside (0, 1)), or undefined. From density 1 up nothing is pruned and ε is not looked at, as in
 * mergekit; a negative ε (which mergekit accepts, keeping small |τ| more often) is refused here.
 */
export function dellaProblem(density: number, epsilon: number, agent: number): string | undefined {
  if (!Number.isFinite(density) || !Number.isFinite(epsilon))
    return `DELLA agent ${agent + 1}: density ${density} and dellaEpsilon ${epsilon} must be finite numbers`;
  if (density >= 1) return undefined;
  if (epsilon < 0) return `DELLA agent ${agent + 1}: dellaEpsilon must be ≥ 0, got ${epsilon}`;
  if (density - epsilon <= 0 || density + epsilon >= 1)
    return (
      `DELLA agent ${agent + 1}: density ± dellaEpsilon must lie inside (0, 1) (mergekit refuses it too), ` +
      `got ${density} ± ${epsilon}`
    );
  return undefined;
}

/** Throws the first dellaProblem of the agents. */
export function checkDella(density: readonly number[], epsilon: readonly number[]): void {
  density.forEach((d, t) => {
    const problem = dellaProblem(d, epsilon[t] ?? DEFAULT_DELLA_EPSILON, t);
    if (problem) throw new RangeError(problem);
  });
}

/** One agent's keep probabilities in units of 2^-24: rank_norm r gives low + floor(r·span). */
export interface DellaThreshold {
  low: number;
  span: number;
}

/** Agent t's threshold; null from density 1 up (τ kept whole, unscaled, as mergekit returns it). */
export function dellaThreshold(density: number, epsilon: number): DellaThreshold | null {
  if (density >= 1) return null;
  const problem = dellaProblem(density, epsilon, 0);
  if (problem) throw new RangeError(problem);
  return { low: Math.round((density - epsilon) * UNIT), span: Math.round(2 * epsilon * UNIT) };
}

/**
 * The keep bound (an entry is kept iff its draw's top 24 bits are below it) of rank `rank` (0 = the
 * smallest |τ|) in a group of `length`: low + floor(rank·span / (length − 1)), at most 2^24. A group of
 * one element, where mergekit divides 0 by 0, takes the middle rank_norm ½ (p = density).
 */
export function dellaKeepBelow(threshold: DellaThreshold, rank: number, length: number): number {
  const numerator = (length > 1 ? rank : 1) * threshold.span;
  const denominator = length > 1 ? length - 1 : 2;
  // Both below 2^53, so the products are exact; the f64 quotient is corrected to the exact floor.
  let q = Math.floor(numerator / denominator);
  while (q * denominator > numerator) q--;
  while ((q + 1) * denominator <= numerator) q++;
  return Math.min(UNIT, threshold.low + q);
}

/**
 * The factor DELLA's kept entry is multiplied by under `density` rescaling (the DELLA paper): 1/p with
 * p = keepBelow / 2^24; 0 where nothing can be kept.
 */
export function dellaInverseP(keepBelow: number): number {
  return keepBelow === 0 ? 0 : UNIT / keepBelow;
}

/**
 * Ranks of |τ| ascending within each group of one window of whole slabs: ranks[i] for element i,
 * equal magnitudes (f32 bits) ordered by element index.
 */
export function dellaRanks(keys: ArrayLike<number>, groups: DellaGroups): Uint32Array {
  const n = keys.length;
  if (n % groups.slab !== 0)
    throw new RangeError(`a DELLA window of ${n} elements does not hold whole slabs of ${groups.slab}`);
  const ranks = new Uint32Array(n);
  const order = new Array<number>(groups.length);
  for (let s = 0; s < n; s += groups.slab)
    for (let k = 0; k < groups.inner; k++) {
      for (let j = 0; j < groups.length; j++) order[j] = s + j * groups.inner + k;
      order.sort((a, b) => keys[a]! - keys[b]! || a - b);
      order.forEach((i, rank) => (ranks[i] = rank));
    }
  return ranks;
}

/** What DELLA keeps of one agent over one window of whole slabs starting at element `start`. */
export interface DellaAgentMask {
  /** 0 where dropped, else the keep bound of the entry's rank (its p in units of 2^-24). */
  keepBelow: Uint32Array;
}

/**
 * Agent t's DELLA mask over a window (values of the base and that agent) of whole slabs starting at
 * `start` of tensor `name`; null where density ≥ 1 keeps everything.
 */
export function dellaMask(
  name: string,
  base: ArrayLike<number>,
  agent: ArrayLike<number>,
  start: number,
  t: number,
  groups: DellaGroups,
  params: { density: number; epsilon: number; seed: number },
): DellaAgentMask | null {
  const threshold = dellaThreshold(params.density, params.epsilon);
  if (!threshold) return null;
  const n = base.length;
  const keys = new Uint32Array(n);
  for (let i = 0; i < n; i++) keys[i] = tauKey(agent[i]!, base[i]!);
  const ranks = dellaRanks(keys, groups);
  const nameHash = fnv1a32(name);
  const keepBelow = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const bound = dellaKeepBelow(threshold, ranks[i]!, groups.length);
    if (dareKept(dareHash(params.seed, nameHash, t, start + i), bound)) keepBelow[i] = bound;
  }
  return { keepBelow };
}

/**
 * Agent t's sparsified τ over the window: kept entries times their rescale factor (`density`: 1/p per
 * entry; `l1`: the tensor's factor `l1Scale` from the norms pass; `none`: 1), dropped entries 0. `f64`
 * holds the values merged (f64 factors), `f32` those the GPU holds (f32 factor, f32 product).
 */
export function dellaAgentTaus(
  base: ArrayLike<number>,
  agent: ArrayLike<number>,
  mask: DellaAgentMask | null,
  rescale: DareRescale,
  l1Scale: number,
): { f64: Float64Array; f32: Float32Array } {
  const n = base.length;
  const f64 = new Float64Array(n);
  const f32 = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const tau = taskVector(agent[i]!, base[i]!);
    if (!mask) {
      f64[i] = tau;
      f32[i] = tau;
      continue;
    }
    const bound = mask.keepBelow[i]!;
    if (bound === 0) continue;
    const scale = rescale === 'density' ? dellaInverseP(bound) : rescale === 'l1' ? l1Scale : 1;
    f64[i] = tau * scale;
    f32[i] = tau * Math.fround(scale);
  }
  return { f64, f32 };
}

/** The parameters DELLA reads (MethodParams has them all). */
export interface DellaParams {
  density: readonly number[];
  /** Per agent ε (mergekit's per-model `epsilon`); absent: DEFAULT_DELLA_EPSILON each. */
  dellaEpsilon?: readonly number[];
  seed: number;
  /** Absent: `density` (1/p per entry). */
  rescale?: DareRescale;
  /** Per agent, the `l1` factor of this tensor (dellaL1Scales). */
  dareScales?: readonly number[];
}

function agentParams(params: DellaParams, t: number): { density: number; epsilon: number; seed: number } {
  return {
    density: params.density[t]!,
    epsilon: params.dellaEpsilon?.[t] ?? DEFAULT_DELLA_EPSILON,
    seed: params.seed,
  };
}

/**
 * Every agent's DELLA-sparsified τ over one window of whole slabs (a SparseTaus: `values` merged in
 * f64, `votes` as the GPU holds them for TIES's sign election).
 */
export function dellaTaus(
  v: { name: string; base: ArrayLike<number>; agents: readonly ArrayLike<number>[] },
  start: number,
  groups: DellaGroups,
  params: DellaParams,
): { values: Float64Array[]; votes: Float32Array[] } {
  const rescale = params.rescale ?? 'density';
  if (rescale === 'l1' && !params.dareScales)
    throw new RangeError('DELLA with the l1 rescale needs the per-tensor factors of the norms pass');
  const values: Float64Array[] = [];
  const votes: Float32Array[] = [];
  v.agents.forEach((agent, t) => {
    const mask = dellaMask(v.name, v.base, agent, start, t, groups, agentParams(params, t));
    const taus = dellaAgentTaus(v.base, agent, mask, rescale, params.dareScales?.[t] ?? 1);
    values.push(taus.f64);
    votes.push(taus.f32);
  });
  return { values, votes };
}

/**
 * Adds one window of whole slabs into the L1 norms (Σ|τ| over all entries and over those DELLA keeps,
 * per agent) that mergekit's `rescale: true` matches; l1Scales (dare-norms.ts) turns them into factors.
 */
export function accumulateDellaNorms(
  norms: { before: number[]; after: number[] },
  v: { name: string; base: ArrayLike<number>; agents: readonly ArrayLike<number>[] },
  start: number,
  groups: DellaGroups,
  params: DellaParams,
): void {
  v.agents.forEach((agent, t) => {
    const mask = dellaMask(v.name, v.base, agent, start, t, groups, agentParams(params, t));
    let before = 0;
    let after = 0;
    for (let i = 0; i < v.base.length; i++) {
      const magnitude = Math.abs(taskVector(agent[i]!, v.base[i]!));
      before += magnitude;
      if (!mask || mask.keepBelow[i] !== 0) after += magnitude;
    }
    norms.before[t]! += before;
    norms.after[t]! += after;
  });
}

/** One window of a tensor as the window functions below read it: its values and its shape. */
interface DellaWindow {
  name: string;
  base: ArrayLike<number>;
  agents: readonly ArrayLike<number>[];
  shape?: readonly number[];
}

/** One window's DELLA-sparsified τ, its rank groups from the window's shape (whole slabs). */
export function dellaWindowTaus(
  v: DellaWindow,
  start: number,
  params: DellaParams,
): { values: Float64Array[]; votes: Float32Array[] } {
  return dellaTaus(v, start, dellaGroups(v.shape, v.base.length), params);
}

/** accumulateDellaNorms over one window of whole slabs, its rank groups from the window's shape. */
export function accumulateDellaWindowNorms(
  norms: { before: number[]; after: number[] },
  v: DellaWindow,
  start: number,
  params: DellaParams,
): void {
  accumulateDellaNorms(norms, v, start, dellaGroups(v.shape, v.base.length), params);
}

/** Elements per window of at most `size`: whole slabs (rank groups), as many as fit, at least one. */
export function dellaWindowElements(
  shape: readonly number[] | undefined,
  numel: number,
  size: number,
): number {
  const { slab } = dellaGroups(shape, numel);
  return slab === 0 ? size : Math.max(1, Math.floor(size / slab)) * slab;
}

/**
 * The rescale factors of a DELLA merge of one tensor: the recipe's `dareScales`, 1 each for `none`,
 * `pass` for the L1 rule (its norms pass), undefined for 1/p per entry.
 */
export function dellaScalePlan(params: DellaParams): readonly number[] | 'pass' | undefined {
  if (params.dareScales) return params.dareScales;
  if (params.rescale === 'none') return params.density.map(() => 1);
  return params.rescale === 'l1' ? 'pass' : undefined;
}

/** Why agent t's density and ε are refused together, where each is in its own range. */
export function dellaAgentProblem(
  params: { density: readonly number[]; dellaEpsilon?: readonly number[] },
  t: number,
): string | undefined {
  return dellaProblem(params.density[t]!, params.dellaEpsilon?.[t] ?? DEFAULT_DELLA_EPSILON, t);
}

/** Throws the first agent's dellaProblem. */
export function checkDellaParams(params: {
  density: readonly number[];
  dellaEpsilon?: readonly number[];
}): void {
  checkDella(params.density, params.dellaEpsilon ?? []);
}

/** What an exported mergekit recipe of a DELLA merge says about its seed and its rescale. */
export function dellaRecipeNotes(params: { seed: number; rescale?: DareRescale }): string[] {
  const notes = [
    `DELLA seed ${params.seed}: merge-studio's own counter-based RNG (mergekit draws its own), keep ` +
      'probabilities in steps of 2^-24; equal |τ| in a row ranked by element index.',
  ];
  if ((params.rescale ?? 'density') === 'density')
    notes.push(
      'merge-studio rescaled each kept DELLA entry by 1/p (the DELLA paper); mergekit has no such rule ' +
        '(rescale: true matches each agent’s L1 norm per tensor), so its result differs.',
    );
  return notes;
}

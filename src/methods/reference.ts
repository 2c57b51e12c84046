// The CPU reference of every kernel: plain f64 arithmetic over whole tensors (or any window of one),
// written from SPEC.md rather than from the shaders. The contract it pins down: τ is the f32 difference
// of the stored values; every discrete decision (|τ| > ε, the TIES top-k and elected sign, "Σw ≠ 0")
// is taken on f32 values and f32 parameters as the GPU takes it; merged values are computed in f64.

import { emptyBranchCounts, type BranchCounts, type TensorStats } from './tensors.ts';
import type { MethodParams } from './types.ts';
import { methodOf, type MethodPlan, type Sparsify } from './registry/index.ts';
import { epsilonF32, f32Bits, taskVector, ulpOf } from './float32.ts';
import { deriveTensorStats, emptyTensorStats, magnitudeBin, tensorLocalLambdas } from './stats.ts';
import { DEFAULT_SLERP_T } from './params.ts';
import { at, atF32 } from '../io/checked.ts';
import { emptyDareNorms, l1Scales } from './dare-norms.ts';
import { SPARSIFIERS } from './sparsifiers.ts';
import { dareDrop, denseTaus, type SparseTaus, type TensorValues } from './taus.ts';

export { bandTaus, denseTaus, topKTaus } from './taus.ts';
export type { SparseTaus, TensorValues } from './taus.ts';
import { slerpAgentsProblem, slerpApply, slerpMerge, type SlerpCoefficients } from './slerp.ts';

/** A window's elements under SPEC.md "Non-finite values". */
export interface NonFiniteScan {
  /** 1 where the models' bits differ and one of them is NaN or ±Inf: not classified, not mergeable. */
  nonFinite: Uint8Array;
  /** 1 where every model holds the same NaN or ±Inf bits: unchanged, kept as it is. */
  kept: Uint8Array;
  /**
   * 1 where every model holds the same bits, finite or not: the merge keeps those bits (−0.0 and
   * subnormals included, which arithmetic may change: −0 + 0 is +0, and a GPU may flush subnormals).
   */
  same: Uint8Array;
  count: number;
  /** Per model, base first: the non-finite elements where it holds NaN or ±Inf. */
  perModel: number[];
}

/**
 * Classifies every element of `v`. Without the base (linear merges agents only) agent 0's bits are the
 * reference and the base is not looked at.
 */
export function scanNonFinite(v: TensorValues, withBase = true): NonFiniteScan {
  const slots = [v.base, ...v.agents];
  const first = withBase ? 0 : 1;
  const bitsOf = (m: number, i: number): number => v.bits?.[m]?.[i] ?? f32Bits(slots[m]![i]!);
  const n = v.base.length;
  const scan: NonFiniteScan = {
    nonFinite: new Uint8Array(n),
    kept: new Uint8Array(n),
    same: new Uint8Array(n),
    count: 0,
    perModel: new Array<number>(slots.length).fill(0),
  };
  for (let i = 0; i < n; i++) {
    let special = false;
    let differs = false;
    const reference = bitsOf(first, i);
    for (let m = first; m < slots.length; m++) {
      if (!Number.isFinite(slots[m]![i]!)) special = true;
      if (bitsOf(m, i) !== reference) differs = true;
    }
    if (!differs) scan.same[i] = 1;
    if (!special) continue;
    if (!differs) {
      scan.kept[i] = 1;
      continue;
    }
    scan.nonFinite[i] = 1;
    scan.count++;
    for (let m = first; m < slots.length; m++) if (!Number.isFinite(slots[m]![i]!)) scan.perModel[m]!++;
  }
  return scan;
}

/** Puts back the inputs' own value where every model holds the same bits (scan.same). */
export function keepUnchanged(
  out: Float64Array,
  v: TensorValues,
  scan: NonFiniteScan,
  withBase = true,
): void {
  const reference = withBase ? v.base : v.agents[0]!;
  for (let i = 0; i < out.length; i++) if (scan.same[i]) out[i] = reference[i]!;
}

/** DARE: keep each entry iff its hash draw is under density, rescale kept entries (1/density unless `dareScales`). */
export function dareTaus(v: TensorValues, start: number, params: MethodParams): SparseTaus {
  return dareDrop(v, start, params);
}

/** Adds the statistics of `v` (a whole tensor or a window) into `into`; call deriveTensorStats after. */
export function accumulateStats(into: TensorStats, v: TensorValues, epsilon: number): void {
  const eps = epsilonF32(epsilon);
  const n = v.agents.length;
  const changed: number[] = [];
  const scan = scanNonFinite(v);
  into.nonFinite += scan.count;
  scan.perModel.forEach((count, m) => (into.nonFiniteModels[m]! += count));
  for (let i = 0; i < v.base.length; i++) {
    if (scan.nonFinite[i]) continue;
    if (scan.kept[i]) {
      into.counts[0]!++;
      if (into.sets) into.sets[0]!++;
      continue;
    }
    const base = v.base[i]!;
    const ulp = ulpOf(base, v.dtype);
    changed.length = 0;
    let positive = false;
    let negative = false;
    for (let t = 0; t < n; t++) {
      const tau = taskVector(v.agents[t]![i]!, base);
      if (!(Math.abs(tau) > eps)) continue;
      changed.push(t);
      if (tau > 0) positive = true;
      else negative = true;
      into.magnitude[t]![magnitudeBin(tau)]!++;
      if (Math.abs(tau) <= ulp) into.oneUlp[t]!++;
    }
    const c = changed.length;
    into.counts[c]!++;
    for (const t of changed) into.overlap[t]![c - 1]!++;
    // Off-diagonal pairs only: deriveTensorStats sets pairs[t][t] = changed[t].
    if (into.pairs) {
      for (const t of changed) for (const u of changed) if (t !== u) into.pairs[t]![u]!++;
    }
    if (into.sets) into.sets[changed.reduce((mask, t) => mask | (1 << t), 0)]!++;
    if (c >= 2 && positive && negative) into.signConflicts++;
  }
}

export function referenceStats(v: TensorValues, epsilon: number): TensorStats {
  const stats = emptyTensorStats(v.name, v.dtype, v.base.length, v.agents.length);
  accumulateStats(stats, v, epsilon);
  return deriveTensorStats(stats);
}

/** RAM family: c = 0 keeps the base, c = 1 adds λ_t τ_t, c ≥ 2 adds the mean of the contributing τ. */
export function ramCombine(v: TensorValues, lambdas: readonly number[], epsilon: number): Float64Array {
  const eps = epsilonF32(epsilon);
  const out = new Float64Array(v.base.length);
  for (let i = 0; i < out.length; i++) {
    const base = v.base[i]!;
    let sum = 0;
    let c = 0;
    let single = 0;
    v.agents.forEach((agent, t) => {
      const tau = taskVector(agent[i]!, base);
      if (Math.abs(tau) > eps) {
        sum += tau;
        c++;
        single = lambdas[t]! * tau;
      }
    });
    out[i] = c === 0 ? base : c === 1 ? base + single : base + sum / c;
  }
  return out;
}

/** Σ in f32, in agent order, of f32-rounded terms: the form in which the GPU decides. */
function f32Sum(terms: Iterable<number>): number {
  let sum = 0;
  for (const term of terms) sum = Math.fround(sum + Math.fround(term));
  return sum;
}

/** Σ w_t θ_t, over Σ w_t when normalising and that sum (of f32 weights) is not zero. */
export function linearCombine(v: TensorValues, weights: readonly number[], normalize: boolean): Float64Array {
  const out = new Float64Array(v.base.length);
  const total = weights.reduce((a, b) => a + b, 0);
  const divide = normalize && f32Sum(weights) !== 0;
  for (let i = 0; i < out.length; i++) {
    let sum = 0;
    v.agents.forEach((agent, t) => (sum += weights[t]! * agent[i]!));
    out[i] = divide ? sum / total : sum;
  }
  return out;
}

/** base + λ Σ_t w_t τ̂_t, over Σ_t w_t when normalising unless |Σ w| < 1e-8 (mergekit). */
export function taskArithmeticCombine(
  v: TensorValues,
  taus: SparseTaus,
  weights: readonly number[],
  lambda: number,
  normalize: boolean,
): Float64Array {
  const out = new Float64Array(v.base.length);
  const total = weights.reduce((a, b) => a + b, 0);
  const divide = normalize && Math.abs(f32Sum(weights)) >= Math.fround(1e-8);
  for (let i = 0; i < out.length; i++) {
    let sum = 0;
    taus.values.forEach((tau, t) => (sum += weights[t]! * tau[i]!));
    out[i] = v.base[i]! + lambda * (divide ? sum / total : sum);
  }
  return out;
}

/**
 * TIES merge of sparsified τ̂: elected sign γ = +1 iff Σ w τ̂ ≥ 0 (decided in f32), then the sum of
 * w τ̂ over the agents whose w τ̂ has sign γ (a zero never agrees), divided by their Σ w when normalising
 * and non-zero, times λ, added to the base (mergekit's `get_mask(method="sum")` and `GTATask`).
 */
export function tiesCombine(
  v: TensorValues,
  taus: SparseTaus,
  weights: readonly number[],
  lambda: number,
  normalize: boolean,
): Float64Array {
  const out = new Float64Array(v.base.length);
  const n = taus.values.length;
  for (let i = 0; i < out.length; i++) {
    const positive = electsPositive(taus, weights, i);
    let sum = 0;
    let total = 0;
    const agreeing: number[] = [];
    for (let t = 0; t < n; t++) {
      const x = taus.values[t]![i]!;
      const w = weights[t]!;
      if (x === 0 || w === 0 || (x > 0 === w > 0) !== positive) continue;
      sum += w * x;
      total += w;
      agreeing.push(w);
    }
    const divide = normalize && f32Sum(agreeing) !== 0;
    out[i] = v.base[i]! + lambda * (divide ? sum / total : sum);
  }
  return out;
}

/** TIES's elected sign at element i: + iff Σ_t w_t τ̂_t ≥ 0, decided in f32 as the GPU decides it. */
function electsPositive(taus: SparseTaus, weights: readonly number[], i: number): boolean {
  const n = taus.votes.length;
  return (
    f32Sum(Array.from({ length: n }, (_, t) => Math.fround(at(weights, t)) * atF32(at(taus.votes, t), i))) >=
    0
  );
}

/**
 * Adds what a merge of sparsified τ̂ summed (merge-branches.ts) into `into`: per element the agents
 * whose w_t·τ̂_t is non-zero (in f32, as the GPU votes), with `consensus` (TIES's election) only those
 * on the elected side. A τ̂ that is not finite counts as no contribution: there every model holds the
 * same NaN or ±Inf (unchanged), or the merge fails (non-finite), so no count of it is kept.
 */
export function accumulateBranches(
  into: BranchCounts,
  taus: SparseTaus,
  weights: readonly number[],
  consensus: boolean,
): void {
  const n = taus.votes.length;
  const length = taus.votes[0]?.length ?? 0;
  const w = weights.map((x) => Math.fround(x));
  for (let i = 0; i < length; i++) {
    let pos = 0;
    let neg = 0;
    let posAgent = 0;
    let negAgent = 0;
    for (let t = 0; t < n; t++) {
      const x = atF32(at(taus.votes, t), i);
      const weight = at(w, t);
      if (x === 0 || weight === 0 || !Number.isFinite(x)) continue;
      if (x > 0 === weight > 0) {
        pos++;
        posAgent = t;
      } else {
        neg++;
        negAgent = t;
      }
    }
    if (pos > 0 && neg > 0) into.signConflicts++;
    // Without the election both sides are summed; with it, the elected one.
    const positive = consensus ? electsPositive(taus, weights, i) : true;
    const c = consensus ? (positive ? pos : neg) : pos + neg;
    into.counts[c] = at(into.counts, c) + 1;
    if (c !== 1) continue;
    const only = (consensus ? positive : pos > 0) ? posAgent : negAgent;
    into.unique[only] = at(into.unique, only) + 1;
  }
}

/**
 * What a merge of the whole tensor keeps, for the methods whose plan sparsifies τ (null for the
 * others, whose branches are the statistics').
 */
export function referenceBranches(v: TensorValues, params: MethodParams): BranchCounts | null {
  const { plan } = methodOf(params.method);
  if (plan.sparsify === undefined) return null;
  const branches = emptyBranchCounts(v.agents.length);
  // A factor per agent (DARE's) changes no entry's sign or zero, so the rule's factors do not matter
  // here; one per entry (1/p) moves TIES's vote: its factors are those of the merge.
  const kept =
    SPARSIFIERS[plan.sparsify].local?.perEntryScale && !params.dareScales
      ? { ...params, dareScales: wholeTensorDareScales(v, params) }
      : params;
  accumulateBranches(branches, sparseTaus(v, kept, plan.sparsify), params.weights, plan.combine === 'ties');
  return branches;
}

/** The factors of a rule other than 1/p, from the whole tensor at once. */
function wholeTensorDareScales(v: TensorValues, params: MethodParams): number[] | undefined {
  if (params.rescale === 'none') return v.agents.map(() => 1);
  if (params.rescale !== 'l1') return undefined;
  const sparsify = methodOf(params.method).plan.sparsify;
  const local = sparsify && SPARSIFIERS[sparsify].local;
  if (!local) return undefined;
  const norms = emptyDareNorms(v.agents.length);
  local.accumulateNorms(norms, v, 0, params);
  return l1Scales(norms);
}

/**
 * The merged tensor in f64 (before rounding to the output dtype). `lambdas` are the global λ of
 * `ramplus` / `ramplus_soft`; `ram` uses 1 and `ramplus_tl` its own per-tensor λ. Elements that every
 * model holds as the same NaN or ±Inf are kept; a merge with non-finite elements (scanNonFinite) fails
 * in the engines, so its values here are not a result.
 */
export function referenceMerge(
  v: TensorValues,
  params: MethodParams,
  lambdas: readonly number[],
): Float64Array {
  const withBase = params.method !== 'linear';
  const out = combineTensor(v, params, lambdas);
  keepUnchanged(out, v, scanNonFinite(v, withBase), withBase);
  return out;
}

/** The sparsified τ of a whole tensor, as the method's plan says. */
function sparseTaus(v: TensorValues, params: MethodParams, sparsify: Sparsify | undefined): SparseTaus {
  return sparsify === undefined ? denseTaus(v) : SPARSIFIERS[sparsify].taus(v, params);
}

/**
 * One step of the method's plan: its λ, its sparsification of τ, its combination. `slerp`: the whole
 * tensor's coefficients, where `v` is a window of it (without them, `v` is the whole tensor).
 */
export function combineWith(
  plan: MethodPlan,
  v: TensorValues,
  params: MethodParams,
  lambdas: readonly number[],
  taus: () => SparseTaus,
  slerp?: SlerpCoefficients,
): Float64Array {
  switch (plan.combine) {
    case 'ram':
      return ramCombine(v, lambdas, params.epsilon);
    case 'linear':
      return linearCombine(v, params.weights, params.normalize);
    case 'task_arithmetic':
      return taskArithmeticCombine(v, taus(), params.weights, params.lambda, params.normalize);
    case 'ties':
      return tiesCombine(v, taus(), params.weights, params.lambda, params.normalize);
    case 'slerp': {
      const problem = slerpAgentsProblem(v.agents.length);
      if (problem) throw new RangeError(problem);
      const agent = at(v.agents, 0);
      return slerp
        ? slerpApply(v.base, agent, slerp)
        : slerpMerge(v.base, agent, params.t ?? DEFAULT_SLERP_T);
    }
  }
}

function combineTensor(v: TensorValues, params: MethodParams, lambdas: readonly number[]): Float64Array {
  const { plan } = methodOf(params.method);
  if (plan.sparsify && SPARSIFIERS[plan.sparsify].local && !params.dareScales)
    params = { ...params, dareScales: wholeTensorDareScales(v, params) };
  const ones = new Array<number>(v.agents.length).fill(1);
  const local =
    plan.lambdas === 'one'
      ? ones
      : plan.lambdas === 'global'
        ? lambdas
        : tensorLocalLambdas(referenceStats(v, params.epsilon), params.r, params.alpha, params.epsilon);
  return combineWith(plan, v, params, local, () => sparseTaus(v, params, plan.sparsify));
}

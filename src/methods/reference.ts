// The CPU reference of every kernel: whole small tensors, plain loops, f64 arithmetic on the
// decoded values. It is written from SPEC.md, not from the shaders, and it is what the GPU engine
// is held to. Masks use τ rounded to f32 and ε rounded to f32: the statistics' definition.
import type { FloatDtype } from '../format/dtype.ts';
import type { TensorStats } from '../engine/types.ts';
import type { MethodParams } from './types.ts';
import { MAGNITUDE_BINS, magnitudeBin, tensorLocalLambdas } from './stats.ts';
import { ulpOf } from './float32.ts';

export interface ReferenceTensor {
  name: string;
  dtype: FloatDtype;
  base: Float64Array;
  agents: Float64Array[];
}

/** τ as the statistics define it: the difference of the stored values, rounded to f32. */
export function tau(agent: number, base: number): number {
  return Math.fround(agent - base);
}

export function changedMask(t: ReferenceTensor, epsilon: number): Uint8Array[] {
  const eps = Math.fround(epsilon);
  return t.agents.map((agent) => {
    const mask = new Uint8Array(t.base.length);
    for (let i = 0; i < mask.length; i++) mask[i] = Math.abs(tau(agent[i]!, t.base[i]!)) > eps ? 1 : 0;
    return mask;
  });
}

export function referenceStats(t: ReferenceTensor, epsilon: number): TensorStats {
  const n = t.agents.length;
  const masks = changedMask(t, epsilon);
  const counts = Array.from({ length: n + 1 }, () => 0);
  const overlap = t.agents.map(() => Array.from({ length: n }, () => 0));
  const magnitude = t.agents.map(() => Array.from({ length: MAGNITUDE_BINS.length }, () => 0));
  const oneUlp = t.agents.map(() => 0);
  let signConflicts = 0;
  for (let i = 0; i < t.base.length; i++) {
    let c = 0;
    for (let a = 0; a < n; a++) c += masks[a]![i]!;
    counts[c]! += 1;
    let positive = false;
    let negative = false;
    for (let a = 0; a < n; a++) {
      if (!masks[a]![i]) continue;
      const d = tau(t.agents[a]![i]!, t.base[i]!);
      overlap[a]![c - 1]! += 1;
      magnitude[a]![magnitudeBin(Math.abs(d))]! += 1;
      if (Math.abs(d) <= ulpOf(t.base[i]!, t.dtype)) oneUlp[a]! += 1;
      if (d > 0) positive = true;
      else negative = true;
    }
    if (c >= 2 && positive && negative) signConflicts += 1;
  }
  const changed = overlap.map((row) => row.reduce((x, y) => x + y, 0));
  return {
    name: t.name,
    dtype: t.dtype,
    numel: t.base.length,
    counts,
    overlap,
    changed,
    unique: overlap.map((row) => row[0]!),
    signConflicts,
    magnitude,
    oneUlp,
  };
}

/** FNV-1a (32-bit) of the UTF-8 bytes of a tensor name: DARE's per-tensor stream id. */
export function fnv1a32(name: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(name)) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h >>> 0;
}

/** A 32-bit integer mixer (the "lowbias32" constants), the same in WGSL. */
export function mix32(x: number): number {
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** DARE's counter-based draw for (seed, tensor, agent, element): a uniform u32. */
export function dareDraw(seed: number, tensorHash: number, agent: number, index: number): number {
  let h = mix32((seed ^ 0x9e3779b9) >>> 0);
  h = mix32((h ^ tensorHash) >>> 0);
  h = mix32((h ^ Math.imul(agent + 1, 0x85ebca6b)) >>> 0);
  return mix32((h ^ index) >>> 0);
}

/** Kept iff draw < threshold; density 1 keeps everything (threshold 2^32). */
export function dareThreshold(density: number): number {
  return density >= 1 ? 2 ** 32 : Math.floor(density * 2 ** 32);
}

/** TIES's top-k: the k elements of largest |τ|, ties broken by lowest index; k = floor(density·numel). */
export function topKMask(magnitudes: Float64Array, density: number): Uint8Array {
  const k = Math.floor(density * magnitudes.length);
  const order = Array.from(magnitudes.keys()).sort((a, b) => magnitudes[b]! - magnitudes[a]! || a - b);
  const mask = new Uint8Array(magnitudes.length);
  for (let j = 0; j < k; j++) mask[order[j]!] = 1;
  return mask;
}

function signConsensus(deltas: Float64Array[], weights: number[], normalize: boolean, i: number): number {
  let sum = 0;
  for (let a = 0; a < deltas.length; a++) sum += weights[a]! * deltas[a]![i]!;
  const elected = sum >= 0 ? 1 : -1;
  let mixed = 0;
  let divisor = 0;
  for (let a = 0; a < deltas.length; a++) {
    const weighted = weights[a]! * deltas[a]![i]!;
    if (Math.sign(weighted) !== elected) continue;
    mixed += weighted;
    divisor += weights[a]!;
  }
  return normalize && divisor !== 0 ? mixed / divisor : mixed;
}

/**
 * Merged values of one tensor, before rounding to the output dtype. `lambdas` are the global λ_t
 * for ram / ramplus / ramplus_soft; ramplus_tl computes its own from this tensor.
 */
export function referenceMerge(t: ReferenceTensor, params: MethodParams, lambdas: number[]): Float64Array {
  const n = t.agents.length;
  const numel = t.base.length;
  const out = new Float64Array(numel);
  const w = params.weights;
  const taus = t.agents.map((agent) => agent.map((v, i) => tau(v, t.base[i]!)));
  switch (params.method) {
    case 'ram':
    case 'ramplus':
    case 'ramplus_soft':
    case 'ramplus_tl': {
      const masks = changedMask(t, params.epsilon);
      const lambda =
        params.method === 'ramplus_tl'
          ? tensorLocalLambdas(referenceStats(t, params.epsilon), params.r, params.alpha, params.epsilon)
          : params.method === 'ram'
            ? t.agents.map(() => 1)
            : lambdas;
      for (let i = 0; i < numel; i++) {
        let c = 0;
        let sum = 0;
        let only = -1;
        for (let a = 0; a < n; a++)
          if (masks[a]![i]) {
            c += 1;
            sum += taus[a]![i]!;
            only = a;
          }
        const merged = c === 0 ? 0 : c === 1 ? lambda[only]! * taus[only]![i]! : sum / c;
        out[i] = t.base[i]! + merged;
      }
      return out;
    }
    case 'linear': {
      const total = w.reduce((x, y) => x + y, 0);
      for (let i = 0; i < numel; i++) {
        let sum = 0;
        for (let a = 0; a < n; a++) sum += w[a]! * t.agents[a]![i]!;
        out[i] = params.normalize ? sum / total : sum;
      }
      return out;
    }
    case 'task_arithmetic':
    case 'dare_linear': {
      const deltas = params.method === 'dare_linear' ? dareDeltas(t, taus, params) : taus;
      const total = w.reduce((x, y) => x + y, 0);
      for (let i = 0; i < numel; i++) {
        let sum = 0;
        for (let a = 0; a < n; a++) sum += w[a]! * deltas[a]![i]!;
        if (params.normalize && Math.abs(total) >= 1e-8) sum /= total;
        out[i] = t.base[i]! + params.lambda * sum;
      }
      return out;
    }
    case 'ties':
    case 'dare_ties': {
      const deltas =
        params.method === 'dare_ties'
          ? dareDeltas(t, taus, params)
          : taus.map((d, a) => {
              const keep = topKMask(d.map(Math.abs), params.density[a]!);
              return d.map((v, i) => (keep[i] ? v : 0));
            });
      for (let i = 0; i < numel; i++)
        out[i] = t.base[i]! + params.lambda * signConsensus(deltas, w, params.normalize, i);
      return out;
    }
  }
}

function dareDeltas(t: ReferenceTensor, taus: Float64Array[], params: MethodParams): Float64Array[] {
  const hash = fnv1a32(t.name);
  return taus.map((d, a) => {
    const density = params.density[a]!;
    const threshold = dareThreshold(density);
    return d.map((v, i) => (dareDraw(params.seed, hash, a, i) < threshold ? v / density : 0));
  });
}

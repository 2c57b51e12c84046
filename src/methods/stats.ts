// Definitions shared by the statistics kernel and its reference: the |τ| magnitude bins, the ulp
// used to spot re-saved models, totals over tensors, and the RAM / RAM+ / RAM+s λ from them.
import type { FloatDtype } from '../format/dtype.ts';
import type { MethodName } from './types.ts';
import type { TensorStats } from '../engine/types.ts';

/** |τ| bins by binary exponent e = floor(log2 |τ|), clamped: bin b holds e = MIN + b (first and last bins are open-ended). */
export const MAGNITUDE_MIN_EXPONENT = -40;
export const MAGNITUDE_MAX_EXPONENT = 8;
export const MAGNITUDE_BINS = MAGNITUDE_MAX_EXPONENT - MAGNITUDE_MIN_EXPONENT + 1;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The f32 bits of a value (rounded to f32 first). */
export function f32Bits(value: number): number {
  f32[0] = value;
  return u32[0]!;
}

/** Bin of a nonzero |τ| given as an f32: its exponent field, so the GPU and the CPU agree exactly. */
export function magnitudeBin(tau: number): number {
  const exponent = ((f32Bits(tau) >>> 23) & 0xff) - 127;
  return Math.min(MAGNITUDE_MAX_EXPONENT, Math.max(MAGNITUDE_MIN_EXPONENT, exponent)) - MAGNITUDE_MIN_EXPONENT;
}

/** Lower edge of a bin as a value (bin 0 starts at 0). */
export function magnitudeBinEdge(bin: number): number {
  return bin === 0 ? 0 : 2 ** (MAGNITUDE_MIN_EXPONENT + bin);
}

const MANTISSA_BITS: Record<FloatDtype, number> = { BF16: 7, F16: 10, F32: 23 };
const MIN_NORMAL_EXPONENT: Record<FloatDtype, number> = { BF16: -126, F16: -14, F32: -126 };

/** Spacing of representable values of `dtype` at the value `x` (x itself representable). */
export function ulpOf(x: number, dtype: FloatDtype): number {
  const exponentField = (f32Bits(x) >>> 23) & 0xff;
  const exponent = Math.max(exponentField - 127, MIN_NORMAL_EXPONENT[dtype]);
  return 2 ** (exponent - MANTISSA_BITS[dtype]);
}

export interface AgentTotals {
  changed: number;
  unique: number;
  shared: number;
  /** overlap[k]: elements changed by this agent and exactly k others. */
  overlap: number[];
  /** N_shared / N_unique; +∞ when no unique element but some shared; 0 when nothing changed. */
  rho: number;
  oneUlp: number;
  magnitude: number[];
}

export interface ModelStats {
  numel: number;
  counts: number[];
  signConflicts: number;
  agents: AgentTotals[];
}

export function rhoOf(shared: number, unique: number): number {
  if (unique > 0) return shared / unique;
  return shared > 0 ? Infinity : 0;
}

/** Integer totals over tensors (exact: every count stays far below 2^53). */
export function sumStats(tensors: TensorStats[], agents: number): ModelStats {
  const total: ModelStats = {
    numel: 0,
    counts: Array.from({ length: agents + 1 }, () => 0),
    signConflicts: 0,
    agents: Array.from({ length: agents }, () => ({
      changed: 0,
      unique: 0,
      shared: 0,
      overlap: Array.from({ length: agents }, () => 0),
      rho: 0,
      oneUlp: 0,
      magnitude: Array.from({ length: MAGNITUDE_BINS }, () => 0),
    })),
  };
  for (const t of tensors) {
    total.numel += t.numel;
    total.signConflicts += t.signConflicts;
    t.counts.forEach((c, i) => (total.counts[i]! += c));
    total.agents.forEach((a, i) => {
      a.changed += t.changed[i]!;
      a.unique += t.unique[i]!;
      a.oneUlp += t.oneUlp[i]!;
      t.overlap[i]!.forEach((v, k) => (a.overlap[k]! += v));
      t.magnitude[i]!.forEach((v, b) => (a.magnitude[b]! += v));
    });
  }
  for (const a of total.agents) {
    a.shared = a.changed - a.unique;
    a.rho = rhoOf(a.shared, a.unique);
  }
  return total;
}

/** λ_t of the RAM family from global statistics (SPEC.md): RAM 1, RAM+ 1 + r·clip(ρ, 0, α), RAM+s 1 + r·shared/changed. */
export function ramLambdas(stats: ModelStats, method: MethodName, r: number, alpha: number): number[] {
  return stats.agents.map((a) => {
    if (a.changed === 0) return 1;
    if (method === 'ramplus') return 1 + r * Math.min(Math.max(a.rho, 0), alpha);
    if (method === 'ramplus_soft') return 1 + (r * a.shared) / a.changed;
    return 1;
  });
}

/** mergekit's tensor-local λ: ρ = shared / max(unique, ε), λ = 1 + r·clip(ρ, 0, α). */
export function tensorLocalLambdas(stats: TensorStats, r: number, alpha: number, epsilon: number): number[] {
  return stats.unique.map((unique, t) => {
    const shared = stats.changed[t]! - unique;
    const rho = shared / Math.max(unique, epsilon);
    return 1 + r * Math.min(Math.max(rho, 0), alpha);
  });
}

// The f32 facts the merge contract is defined on (τ and |τ| are f32, decisions compare f32 bits), shared
// by the CPU reference, the CPU engine and the tests so every side rounds the same way.

import type { FloatDtype } from '../format/dtype.ts';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Bit pattern of a number rounded to f32. */
export function f32Bits(value: number): number {
  f32[0] = value;
  return u32[0]!;
}

/** The f32 whose bit pattern is `bits`. */
export function f32FromBits(bits: number): number {
  u32[0] = bits >>> 0;
  return f32[0]!;
}

/** τ = θ_agent − θ_base computed in f32 from the stored values, as the kernels do. */
export function taskVector(agent: number, base: number): number {
  return Math.fround(agent - base);
}

/** |x| as f32 bits: orders magnitudes like the values (NaN above +Inf), used by the TIES select. */
export function magnitudeKey(x: number): number {
  return f32Bits(x) & 0x7fffffff;
}

const ULP_FORMAT: Record<FloatDtype, { minExponent: number; mantissaBits: number }> = {
  F32: { minExponent: -126, mantissaBits: 23 },
  BF16: { minExponent: -126, mantissaBits: 7 },
  F16: { minExponent: -14, mantissaBits: 10 },
};

/**
 * One ulp of a stored value in its dtype: 2^(e − mantissa bits) with e its binary exponent, the
 * subnormal spacing for zero and subnormals. NaN for a non-finite value (no change is "one ulp" there).
 */
export function ulpOf(value: number, dtype: FloatDtype): number {
  if (!Number.isFinite(value)) return NaN;
  const { minExponent, mantissaBits } = ULP_FORMAT[dtype];
  // Every input value is an exact f32, so its exponent field is its binary exponent.
  const exponent = Math.max(((f32Bits(Math.abs(value)) >>> 23) & 0xff) - 127, minExponent);
  return 2 ** (exponent - mantissaBits);
}

/**
 * The f32 threshold that decides |τ| > ε exactly as the real ε does (SPEC.md "Precision facts"): the
 * largest f32 ≤ ε. The nearest f32 can lie above ε (1e-3 does) and would drop |τ| = fround(ε).
 */
export function epsilonF32(epsilon: number): number {
  const nearest = Math.fround(epsilon);
  if (!(nearest > epsilon)) return nearest;
  // A positive f32's next smaller f32 is one bit pattern down (0 has no smaller one that is ≥ 0).
  return nearest === 0 ? 0 : f32FromBits(f32Bits(nearest) - 1);
}

/**
 * The TIES select's key of τ: 0 where the agent holds the base's value, so an element that every
 * model stores as the same ±Inf or NaN is unchanged (SPEC.md "Non-finite values") rather than huge.
 */
export function tauKey(agent: number, base: number): number {
  return Object.is(agent, base) ? 0 : magnitudeKey(taskVector(agent, base));
}

// The safetensors dtype table and exact codecs between the stored float formats and f32/f64.
// Pure functions over numbers and typed arrays: no platform APIs, so the GPU kernels' CPU
// reference, the reader/writer and the tests all share one definition.

import { at } from '../io/checked.ts';

export const DTYPES = [
  'BOOL',
  'U8',
  'I8',
  'F8_E5M2',
  'F8_E4M3',
  'F8_E4M3FN',
  'F8_E4M3FNUZ',
  'F8_E5M2FNUZ',
  'F8_E8M0',
  'I16',
  'U16',
  'F16',
  'BF16',
  'I32',
  'U32',
  'F32',
  'I64',
  'U64',
  'F64',
  'C64',
  'F4',
  'F6_E2M3',
  'F6_E3M2',
] as const;

export type Dtype = (typeof DTYPES)[number];

const BITS: Record<Dtype, number> = {
  BOOL: 8,
  U8: 8,
  I8: 8,
  F8_E5M2: 8,
  F8_E4M3: 8,
  F8_E4M3FN: 8,
  F8_E4M3FNUZ: 8,
  F8_E5M2FNUZ: 8,
  F8_E8M0: 8,
  I16: 16,
  U16: 16,
  F16: 16,
  BF16: 16,
  I32: 32,
  U32: 32,
  F32: 32,
  I64: 64,
  U64: 64,
  F64: 64,
  C64: 64,
  F4: 4,
  F6_E2M3: 6,
  F6_E3M2: 6,
};

export function isDtype(value: unknown): value is Dtype {
  return typeof value === 'string' && Object.hasOwn(BITS, value);
}

/** Bits per element. */
export function dtypeBits(dtype: Dtype): number {
  return BITS[dtype];
}

/** Alignment in bytes that a tensor of this dtype wants in a written file (sub-byte types: 1). */
export function dtypeAlignment(dtype: Dtype): number {
  return Math.max(1, BITS[dtype] / 8) | 0;
}

/** The float dtypes the merge kernels read and write; everything else is copied as raw bytes. */
export type FloatDtype = 'BF16' | 'F16' | 'F32';

export function isMergeableDtype(dtype: Dtype): dtype is FloatDtype {
  return dtype === 'BF16' || dtype === 'F16' || dtype === 'F32';
}

// One 4-byte scratch word, reinterpreted between f32 and u32 (the same endianness both ways).
const word = new DataView(new ArrayBuffer(4));

/** Exact widening: a bf16 is the upper half of an f32. */
export function bf16ToF32(bits: number): number {
  word.setUint32(0, (bits & 0xffff) << 16, true);
  return word.getFloat32(0, true);
}

/** f32 (given as a JS number, first rounded to f32) to bf16 bits, round-to-nearest-even. NaN stays NaN (quiet). */
export function f32ToBf16(value: number): number {
  word.setFloat32(0, value, true);
  const x = word.getUint32(0, true);
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 0x0040) & 0xffff;
  const rounded = x + 0x7fff + ((x >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

/** Exact widening of IEEE half bits, subnormals, infinities and NaN included. */
export function f16ToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/**
 * A number to IEEE half bits, round-to-nearest-even, from its exact value (an f64 or an f32).
 * Overflow gives ±Inf, NaN a quiet NaN, tiny values subnormals or ±0.
 */
export function f32ToF16(value: number): number {
  if (Number.isNaN(value)) return 0x7e00;
  const sign = value < 0 || Object.is(value, -0) ? 0x8000 : 0;
  const a = Math.abs(value);
  if (a === Infinity) return sign | 0x7c00;
  // Subnormal range: the value in units of 2^-24, rounded half to even.
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24);
  let exponent = Math.floor(Math.log2(a));
  if (2 ** exponent > a) exponent -= 1;
  else if (2 ** (exponent + 1) <= a) exponent += 1;
  const mantissa = roundHalfEven((a / 2 ** exponent - 1) * 1024);
  // A carry out of the mantissa bumps the exponent; the encoding's layout makes the add do that.
  const biased = (exponent + 15) * 1024 + mantissa;
  if (biased >= 0x7c00) return sign | 0x7c00;
  return sign | biased;
}

function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const rest = x - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** Rounds a number to the nearest f32 (ties to even), as the GPU stores it. */
export function roundToF32(value: number): number {
  return Math.fround(value);
}

/** Decodes `count` elements of a float dtype from little-endian bytes into f64 values. */
export function decodeFloats(dtype: FloatDtype, bytes: Uint8Array, count: number): Float64Array {
  const out = new Float64Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dtype === 'F32') for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  else if (dtype === 'BF16') for (let i = 0; i < count; i++) out[i] = bf16ToF32(view.getUint16(i * 2, true));
  else for (let i = 0; i < count; i++) out[i] = f16ToF32(view.getUint16(i * 2, true));
  return out;
}

/** Encodes values to a float dtype (round-to-nearest-even), little-endian. */
export function encodeFloats(dtype: FloatDtype, values: ArrayLike<number>): Uint8Array {
  const bytes = new Uint8Array(values.length * (dtype === 'F32' ? 4 : 2));
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) {
    const v = at(values, i, 'encodeFloats values');
    if (dtype === 'F32') view.setFloat32(i * 4, v, true);
    else view.setUint16(i * 2, dtype === 'BF16' ? f32ToBf16(v) : f32ToF16(v), true);
  }
  return bytes;
}

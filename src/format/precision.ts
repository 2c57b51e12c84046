// The read precision D of SPEC.md "Inputs stored in other precisions": which float dtype each tensor's
// values are read at when the models store it differently, and the exact re-encoding from a stored
// dtype to D (round to nearest even, as dtype.ts rounds), fast enough to run on every window read.

import { f16ToF32, f32ToF16, type FloatDtype } from './dtype.ts';

/** A read precision: a float dtype, or `stored` (each model's own values). */
export type ReadDtype = FloatDtype | 'stored';

export const READ_DTYPE_FLAGS: Record<string, ReadDtype> = {
  bf16: 'BF16',
  f16: 'F16',
  f32: 'F32',
  stored: 'stored',
};

/** Whether every value of `from` is a value of `to` (widening is exact). */
export function widensExactly(from: FloatDtype, to: FloatDtype): boolean {
  return from === to || to === 'F32';
}

/**
 * The dtype tensor values are read at, given each model's stored dtype (base first) and the asked
 * precision (undefined: the default). Default: the one stored dtype where all agree, else the base's.
 * `stored`: the one stored dtype, else F32, which holds BF16, F16 and F32 values exactly. A D that
 * only widens one stored dtype gives the same values, so the stored bytes are read as they are.
 */
export function tensorReadDtype(stored: readonly FloatDtype[], asked?: ReadDtype): FloatDtype {
  const [base = 'F32', ...rest] = stored;
  const uniform = rest.every((d) => d === base);
  if (asked === undefined) return base;
  if (asked === 'stored') return uniform ? base : 'F32';
  return uniform && widensExactly(base, asked) ? base : asked;
}

/** Whether reading at `read` changes a value of any model (a rounding, not just a widening). */
export function readRounds(stored: readonly FloatDtype[], read: FloatDtype): boolean {
  return stored.some((d) => !widensExactly(d, read));
}

let f16Table: Uint32Array | undefined;

/**
 * Every f16 pattern's f32 bits, built once (a lookup beats decoding per element): the exact value,
 * and a NaN's payload shifted up, as shaders/common/codec.wgsl widens it.
 */
function f16Bits(): Uint32Array {
  if (!f16Table) {
    f16Table = new Uint32Array(0x10000);
    const value = new Float32Array(f16Table.buffer);
    for (let h = 0; h < 0x10000; h++) {
      if ((h & 0x7c00) === 0x7c00)
        f16Table[h] = (((h & 0x8000) << 16) | 0x7f800000 | ((h & 0x3ff) << 13)) >>> 0;
      else value[h] = f16ToF32(h);
    }
  }
  return f16Table;
}

/** f32 bits to f16 bits, round to nearest even: f32ToF16 of dtype.ts on the bit pattern, NaN → 0x7e00. */
export function f32BitsToF16(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return 0x7e00;
  // 65520 (half-way to 2^16, above the largest f16) and beyond round to ±Inf.
  if (abs >= 0x477ff000) return sign | 0x7c00;
  if (abs >= 0x38800000) {
    // Normal: re-bias the exponent (127 → 15) and round the 13 dropped mantissa bits; a carry
    // runs into the exponent, which the layout makes right.
    const h = (abs - 0x38000000) >>> 13;
    const rest = abs & 0x1fff;
    return sign | (rest > 0x1000 || (rest === 0x1000 && (h & 1) === 1) ? h + 1 : h);
  }
  // Subnormal or zero: rare, so the exact number path.
  return sign | (f32ToF16(Math.abs(f32FromBits(abs))) & 0x7fff);
}

const word = new DataView(new ArrayBuffer(4));
function f32FromBits(bits: number): number {
  word.setUint32(0, bits, true);
  return word.getFloat32(0, true);
}

/**
 * Re-encodes `count` elements from `from` to `to` (little-endian bytes), rounding to nearest even.
 * Returns how many finite values became ±Inf (they are non-finite at `to`, SPEC.md).
 */
export function recodeFloats(
  from: FloatDtype,
  to: FloatDtype,
  source: Uint8Array,
  target: Uint8Array,
  count: number,
): number {
  if (from === to) {
    target.set(source.subarray(0, count * (from === 'F32' ? 4 : 2)));
    return 0;
  }
  const inWords = words(from, source, count);
  const outWords = words(to, target, count);
  const overflow = recodeWords(from, to, inWords, outWords, count);
  if (outWords.buffer !== target.buffer)
    target.set(new Uint8Array(outWords.buffer, outWords.byteOffset, outWords.byteLength));
  return overflow;
}

function recodeWords(
  from: FloatDtype,
  to: FloatDtype,
  inWords: Uint16Array | Uint32Array,
  outWords: Uint16Array | Uint32Array,
  count: number,
): number {
  if (from === 'BF16' && to === 'F32') {
    for (let i = 0; i < count; i++) outWords[i] = (inWords[i] ?? 0) << 16;
    return 0;
  }
  const table = from === 'F16' ? f16Bits() : undefined;
  if (table && to === 'F32') {
    for (let i = 0; i < count; i++) outWords[i] = table[inWords[i] ?? 0] ?? 0;
    return 0;
  }
  if (from === 'F32' && to === 'BF16') return f32ToBf16Words(inWords, outWords, count);
  // Narrowing: through the exact f32 bits of the input.
  let overflow = 0;
  for (let i = 0; i < count; i++) {
    const v = inWords[i] ?? 0;
    const x = from === 'F32' ? v : from === 'BF16' ? v << 16 : (table?.[v] ?? 0);
    const h = to === 'BF16' ? bf16Bits(x) : f32BitsToF16(x);
    outWords[i] = h;
    if ((h & 0x7fff) === (to === 'BF16' ? 0x7f80 : 0x7c00) && (x & 0x7fffffff) < 0x7f800000) overflow++;
  }
  return overflow;
}

/** The commonest narrowing (f32 agents over a bf16 base) in its own loop, without per-element branches on dtypes. */
function f32ToBf16Words(
  inWords: Uint16Array | Uint32Array,
  outWords: Uint16Array | Uint32Array,
  count: number,
): number {
  let overflow = 0;
  for (let i = 0; i < count; i++) {
    const x = inWords[i] ?? 0;
    const abs = x & 0x7fffffff;
    if (abs > 0x7f800000) {
      outWords[i] = ((x >>> 16) | 0x0040) & 0xffff;
      continue;
    }
    const h = ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
    outWords[i] = h;
    if ((h & 0x7fff) === 0x7f80 && abs < 0x7f800000) overflow++;
  }
  return overflow;
}

/** f32 bits to bf16 bits as f32ToBf16 of dtype.ts does (a quiet NaN keeps its sign and top payload). */
function bf16Bits(x: number): number {
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 0x0040) & 0xffff;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/** `count` elements of little-endian bytes as words of the dtype: a view, or a copy where misaligned. */
function words(dtype: FloatDtype, bytes: Uint8Array, count: number): Uint16Array | Uint32Array {
  const size = dtype === 'F32' ? 4 : 2;
  const aligned = bytes.byteOffset % size === 0 ? bytes : bytes.slice(0, count * size);
  return size === 4
    ? new Uint32Array(aligned.buffer, aligned.byteOffset, count)
    : new Uint16Array(aligned.buffer, aligned.byteOffset, count);
}

// The dtype table and the bf16/f16 codecs: exhaustive round trips over all 65536 bit patterns,
// round-to-nearest-even at the ties, NaN, infinities, signed zero and subnormals.
import { describe, expect, it } from 'vitest';
import { atF32 } from '../io/checked.ts';
import {
  bf16ToF32,
  decodeFloats,
  DTYPES,
  dtypeAlignment,
  dtypeBits,
  encodeFloats,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  isDtype,
  isMergeableDtype,
} from './dtype.ts';

/** The f32 with these bits, as a JS number. */
function f32FromBits(bits: number): number {
  return atF32(new Float32Array(new Uint32Array([bits >>> 0]).buffer), 0);
}

const isBf16NaN = (bits: number): boolean => (bits & 0x7f80) === 0x7f80 && (bits & 0x7f) !== 0;
const isF16NaN = (bits: number): boolean => (bits & 0x7c00) === 0x7c00 && (bits & 0x3ff) !== 0;

describe('dtype table', () => {
  it('has the safetensors bit sizes and alignments', () => {
    expect(DTYPES).toHaveLength(23);
    expect(DTYPES.map((d) => [d, dtypeBits(d)]).filter(([, bits]) => bits !== 8)).toEqual([
      ['I16', 16],
      ['U16', 16],
      ['F16', 16],
      ['BF16', 16],
      ['I32', 32],
      ['U32', 32],
      ['F32', 32],
      ['I64', 64],
      ['U64', 64],
      ['F64', 64],
      ['C64', 64],
      ['F4', 4],
      ['F6_E2M3', 6],
      ['F6_E3M2', 6],
    ]);
    expect(['F4', 'F6_E2M3', 'BOOL', 'BF16', 'F32', 'C64'].map((d) => dtypeAlignment(d as never))).toEqual([
      1, 1, 1, 2, 4, 8,
    ]);
  });
  it('recognises dtype names exactly', () => {
    expect(isDtype('BF16')).toBe(true);
    expect(['bf16', 'F128', 'toString', '__proto__', 16, null].some(isDtype)).toBe(false);
    expect(DTYPES.filter(isMergeableDtype)).toEqual(['F16', 'BF16', 'F32']);
  });
});

describe('bf16', () => {
  it('widens and narrows every one of the 65536 patterns back to itself (NaNs stay NaN)', () => {
    let exact = 0;
    for (let bits = 0; bits < 0x10000; bits++) {
      const value = bf16ToF32(bits);
      expect(value).toBe(f32FromBits(bits << 16));
      const back = f32ToBf16(value);
      if (isBf16NaN(bits)) {
        expect(isBf16NaN(back)).toBe(true);
        expect(back & 0x40).toBe(0x40);
      } else {
        if (back !== bits) expect.fail(`bf16 0x${bits.toString(16)} came back as 0x${back.toString(16)}`);
        exact += 1;
      }
    }
    expect(exact).toBe(65536 - 2 * 127);
  });

  it('rounds to nearest, ties to even', () => {
    expect(f32ToBf16(f32FromBits(0x3f808000))).toBe(0x3f80); // tie, 0x3f80 is even
    expect(f32ToBf16(f32FromBits(0x3f818000))).toBe(0x3f82); // tie, rounds up to even
    expect(f32ToBf16(f32FromBits(0x3f808001))).toBe(0x3f81); // just above the tie
    expect(f32ToBf16(f32FromBits(0x3f807fff))).toBe(0x3f80); // just below the tie
    expect(f32ToBf16(f32FromBits(0xbf818000))).toBe(0xbf82); // sign does not change the rounding
  });

  it('overflows to infinity, keeps signed zero, infinities and subnormals', () => {
    expect(f32ToBf16(f32FromBits(0x7f7fffff))).toBe(0x7f80);
    expect(f32ToBf16(f32FromBits(0x7f7f7fff))).toBe(0x7f7f);
    expect(f32ToBf16(-0)).toBe(0x8000);
    expect(f32ToBf16(Infinity)).toBe(0x7f80);
    expect(f32ToBf16(-Infinity)).toBe(0xff80);
    expect(f32ToBf16(f32FromBits(0x00008000))).toBe(0x0000); // tie between 0 and the smallest subnormal
    expect(f32ToBf16(f32FromBits(0x00018000))).toBe(0x0002);
    expect(bf16ToF32(0x0001)).toBe(2 ** -133);
    expect(isBf16NaN(f32ToBf16(NaN))).toBe(true);
  });
});

describe('f16', () => {
  it('widens and narrows every one of the 65536 patterns back to itself (NaNs become the quiet NaN)', () => {
    let exact = 0;
    for (let bits = 0; bits < 0x10000; bits++) {
      const value = f16ToF32(bits);
      const back = f32ToF16(value);
      if (isF16NaN(bits)) {
        expect(Number.isNaN(value)).toBe(true);
        expect(back).toBe(0x7e00);
      } else {
        if (back !== bits) expect.fail(`f16 0x${bits.toString(16)} came back as 0x${back.toString(16)}`);
        // Every f16 is exactly an f32, so widening must not have rounded.
        expect(Math.fround(value)).toBe(value);
        exact += 1;
      }
    }
    expect(exact).toBe(65536 - 2 * 1023);
  });

  it('decodes the landmarks exactly', () => {
    expect(f16ToF32(0x3c00)).toBe(1);
    expect(f16ToF32(0x7bff)).toBe(65504);
    expect(f16ToF32(0x0400)).toBe(2 ** -14);
    expect(f16ToF32(0x03ff)).toBe(1023 * 2 ** -24);
    expect(f16ToF32(0x0001)).toBe(2 ** -24);
    expect(Object.is(f16ToF32(0x8000), -0)).toBe(true);
    expect(f16ToF32(0xfc00)).toBe(-Infinity);
  });

  it('rounds to nearest, ties to even, in the normal range', () => {
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // tie, 0x3c00 even
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie, rounds up to even
    expect(f32ToF16(1 + 2 ** -11 + 2 ** -20)).toBe(0x3c01);
    expect(f32ToF16(-(1 + 3 * 2 ** -11))).toBe(0xbc02);
    expect(f32ToF16(2047.5)).toBe(0x6800); // 2047.5 is a tie between 2047 and 2048; 2048 (0x6800) is even
  });

  it('overflows to infinity at the right place', () => {
    expect(f32ToF16(65504)).toBe(0x7bff);
    expect(f32ToF16(65519.99)).toBe(0x7bff);
    expect(f32ToF16(65520)).toBe(0x7c00); // the tie with 65536 rounds to even, which is infinity
    expect(f32ToF16(-1e10)).toBe(0xfc00);
  });

  it('rounds subnormals half to even and keeps signed zero', () => {
    expect(f32ToF16(2 ** -25)).toBe(0x0000); // tie between 0 and 2^-24
    expect(f32ToF16(3 * 2 ** -25)).toBe(0x0002); // tie between 1 and 2 units
    expect(f32ToF16(2 ** -25 + 2 ** -40)).toBe(0x0001);
    expect(f32ToF16(2 ** -14 - 2 ** -25)).toBe(0x0400); // rounds up out of the subnormals
    expect(f32ToF16(-0)).toBe(0x8000);
    expect(f32ToF16(-(2 ** -26))).toBe(0x8000);
    expect(f32ToF16(1e-30)).toBe(0x0000);
  });
});

describe('decodeFloats / encodeFloats', () => {
  it('are exact inverses on stored values, little-endian', () => {
    for (const dtype of ['F32', 'BF16', 'F16'] as const) {
      const bytes = new Uint8Array(dtype === 'F32' ? 12 : 6);
      const view = new DataView(bytes.buffer);
      if (dtype === 'F32')
        [1.5, -0, 3.4028234663852886e38].forEach((v, i) => view.setFloat32(i * 4, v, true));
      else [0x3fc0, 0x8000, 0x0001].forEach((v, i) => view.setUint16(i * 2, v, true));
      const values = decodeFloats(dtype, bytes, 3);
      expect(encodeFloats(dtype, values)).toEqual(bytes);
    }
    expect(Array.from(decodeFloats('BF16', new Uint8Array([0xc0, 0x3f]), 1))).toEqual([1.5]);
    expect(Array.from(decodeFloats('F16', new Uint8Array([0x00, 0x3c]), 1))).toEqual([1]);
  });
});

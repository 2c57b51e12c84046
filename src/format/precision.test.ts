// The read precision: which dtype a tensor is read at (SPEC.md "Inputs stored in other precisions"),
// and the fast re-encoding, bit for bit the codecs of dtype.ts on every 16-bit pattern and on random
// and boundary f32 patterns, with the finite values that round to ±Inf counted.
import { describe, expect, it } from 'vitest';
import {
  bf16ToF32,
  decodeFloats,
  encodeFloats,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  type FloatDtype,
} from './dtype.ts';
import { f32BitsToF16, readRounds, recodeFloats, tensorReadDtype } from './precision.ts';
import { rng } from '../test/fixtures.ts';

const word = new DataView(new ArrayBuffer(4));
const f32 = (bits: number): number => (word.setUint32(0, bits >>> 0, true), word.getFloat32(0, true));

/** f32 patterns: random, and every f16 value's neighbourhood (ties, the overflow edge, subnormals). */
function f32Patterns(): Uint32Array {
  const random = rng(7);
  const out: number[] = [];
  for (let i = 0; i < 200_000; i++) out.push(Math.floor(random() * 2 ** 32));
  for (let h = 0; h < 0x10000; h += 3) {
    word.setFloat32(0, f16ToF32(h), true);
    const x = word.getUint32(0, true);
    for (const d of [-0x1001, -0x1000, -1, 0, 1, 0x1000, 0x1001]) out.push((x + d) >>> 0);
  }
  out.push(0x477fe000, 0x477fefff, 0x477ff000, 0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc00001);
  return new Uint32Array(out);
}

describe('f32BitsToF16', () => {
  it('equals f32ToF16 of dtype.ts on random and boundary patterns', () => {
    const bad: string[] = [];
    for (const x of f32Patterns()) {
      const want = f32ToF16(f32(x));
      if (f32BitsToF16(x) !== want && bad.length < 5) bad.push(x.toString(16));
    }
    expect(bad).toEqual([]);
  });
});

describe('recodeFloats', () => {
  const dtypes: FloatDtype[] = ['BF16', 'F16', 'F32'];
  const sixteen = new Uint16Array(0x10000).map((_, i) => i);
  const thirtyTwo = f32Patterns();
  const inputs: Record<FloatDtype, Uint8Array> = {
    BF16: new Uint8Array(sixteen.buffer),
    F16: new Uint8Array(sixteen.buffer),
    F32: new Uint8Array(thirtyTwo.buffer),
  };

  for (const from of dtypes)
    for (const to of dtypes) {
      it(`${from} → ${to} equals decoding then encoding, NaN for NaN`, () => {
        const source = inputs[from];
        const count = source.byteLength / (from === 'F32' ? 4 : 2);
        const target = new Uint8Array(count * (to === 'F32' ? 4 : 2));
        const overflow = recodeFloats(from, to, source, target, count);
        const values = decodeFloats(from, source, count);
        const want = encodeFloats(to, values);
        const got = decodeFloats(to, target, count);
        const wantValues = decodeFloats(to, want, count);
        let mismatches = 0;
        let infinities = 0;
        for (let i = 0; i < count; i++) {
          const same = Number.isNaN(wantValues[i] ?? 0)
            ? Number.isNaN(got[i] ?? 0)
            : Object.is(got[i], wantValues[i]);
          if (!same) mismatches++;
          if (Number.isFinite(values[i] ?? 0) && !Number.isFinite(got[i] ?? 0)) infinities++;
        }
        expect(mismatches).toBe(0);
        expect(overflow).toBe(infinities);
        if (from === 'BF16' && to === 'F16') expect(overflow).toBeGreaterThan(0);
      });
    }

  it('widens an f16 NaN as the WGSL codec does (payload shifted up) and bf16 by a shift', () => {
    const target = new Uint8Array(8);
    recodeFloats('F16', 'F32', new Uint8Array(new Uint16Array([0xfe01, 0x7c00]).buffer), target, 2);
    expect([...new Uint32Array(target.buffer)]).toEqual([0xffc02000, 0x7f800000]);
    recodeFloats('BF16', 'F32', new Uint8Array(new Uint16Array([0xffc1, 0x3f80]).buffer), target, 2);
    expect([...new Uint32Array(target.buffer)]).toEqual([0xffc10000, 0x3f800000]);
    expect(bf16ToF32(0x3f80)).toBe(1);
  });

  it('counts a finite f32 beyond bf16 and f16 range as an overflow, Inf itself not', () => {
    const source = new Uint8Array(new Float32Array([3.4e38, 70000, Infinity, 1]).buffer);
    const half = new Uint8Array(8);
    expect(recodeFloats('F32', 'BF16', source, half, 4)).toBe(1);
    expect([...new Uint16Array(half.buffer)]).toEqual([0x7f80, f32ToBf16(70000), 0x7f80, 0x3f80]);
    expect(recodeFloats('F32', 'F16', source, half, 4)).toBe(2);
  });

  it('reads from and writes to unaligned views', () => {
    const backing = new Uint8Array(11);
    backing.set(new Uint8Array(new Float32Array([1.5, -2.25]).buffer), 1);
    const out = new Uint8Array(7);
    recodeFloats('F32', 'BF16', backing.subarray(1, 9), out.subarray(1, 5), 2);
    expect([...decodeFloats('BF16', out.slice(1, 5), 2)]).toEqual([1.5, -2.25]);
  });
});

describe('tensorReadDtype', () => {
  it('keeps a uniform set as stored by default and reads a mixed one at the base’s dtype', () => {
    expect(tensorReadDtype(['BF16', 'BF16'])).toBe('BF16');
    expect(tensorReadDtype(['BF16', 'F32', 'F32'])).toBe('BF16');
    expect(tensorReadDtype(['F32', 'BF16'])).toBe('F32');
  });
  it('reads `stored` at the one dtype, or F32 where they differ', () => {
    expect(tensorReadDtype(['F16', 'F16'], 'stored')).toBe('F16');
    expect(tensorReadDtype(['BF16', 'F16'], 'stored')).toBe('F32');
  });
  it('reads at an asked dtype, except where it only widens one stored dtype', () => {
    expect(tensorReadDtype(['F32', 'F32'], 'BF16')).toBe('BF16');
    expect(tensorReadDtype(['BF16', 'BF16'], 'F32')).toBe('BF16');
    expect(tensorReadDtype(['BF16', 'F32'], 'F32')).toBe('F32');
    expect(tensorReadDtype(['BF16', 'BF16'], 'F16')).toBe('F16');
  });
  it('says whether a read precision rounds any model’s values', () => {
    expect(readRounds(['BF16', 'F32'], 'BF16')).toBe(true);
    expect(readRounds(['BF16', 'F32'], 'F32')).toBe(false);
    expect(readRounds(['BF16', 'F16'], 'F32')).toBe(false);
    expect(readRounds(['F16', 'F16'], 'BF16')).toBe(true);
  });
});

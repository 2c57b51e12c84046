// The WGSL codec (shaders/common/codec.wgsl) against src/format/dtype.ts, through the convert kernel:
// every bf16 and f16 pattern widened, f32 narrowed at every f16 rounding boundary and on the special
// cases, and the pad half of an odd last word written as 0.
import { afterAll, describe, expect, it } from 'vitest';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16, type FloatDtype } from '../../format/dtype.ts';
import { f32Bits, f32FromBits } from '../../methods/float32.ts';
import { seededRandom } from '../../methods/rng.ts';
import { convertOnGpu } from '../../worker/self-test.ts';
import { openGpuHarness } from '../../test/gpu-harness.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

/** Converts `count` elements with the convert kernel; returns the raw output words, pad included. */
function convert(input: Uint8Array, count: number, from: FloatDtype, to: FloatDtype): Promise<Uint8Array> {
  return convertOnGpu(harness!.device, input, count, from, to);
}

const u16 = (values: readonly number[]): Uint8Array => new Uint8Array(Uint16Array.from(values).buffer);
const u32 = (values: readonly number[]): Uint8Array => new Uint8Array(Uint32Array.from(values).buffer);
const all16 = Array.from({ length: 65536 }, (_, h) => h);
const isNaN32 = (bits: number): boolean => (bits & 0x7fffffff) > 0x7f800000;
const isNaN16 = (bits: number, dtype: 'BF16' | 'F16'): boolean =>
  dtype === 'BF16' ? (bits & 0x7fff) > 0x7f80 : (bits & 0x7fff) > 0x7c00;

/** f32 inputs where rounding to f16 is decided: every f16 value, every midpoint and their neighbours. */
function f16Boundaries(): number[] {
  const out: number[] = [];
  for (let h = 0; h < 0x7c00; h++) {
    const lo = f16ToF32(h);
    const mid = (lo + f16ToF32(h + 1)) / 2;
    for (const sign of [1, -1]) {
      for (const v of [lo, mid]) {
        const bits = f32Bits(sign * v);
        out.push(bits, (bits + 1) >>> 0, (bits - 1) >>> 0);
      }
    }
  }
  return out.filter((b) => !isNaN32(b));
}

const SPECIAL_F32 = [
  0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0x7fbfffff, 0xff812345,
  0x7f7fffff, 0xff7fffff, 0x00000001, 0x807fffff, 0x00800000, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x477fe000,
  0x477fefff, 0x477ff000, 0x477ff001, 0x47800000, 0x33000000, 0x33000001, 0x32ffffff, 0x33800000, 0x38800000,
  0x387fffff, 0x387fe000,
];

describe.skipIf(!harness)(`WGSL codec vs src/format/dtype.ts ${opened.skip ?? ''}`, () => {
  it('widens every bf16 pattern exactly', async () => {
    const got = new Uint32Array((await harness!.run(() => convert(u16(all16), 65536, 'BF16', 'F32'))).buffer);
    for (const h of all16) expect(got[h]).toBe((h << 16) >>> 0);
  });

  it('widens every f16 pattern exactly, subnormals included (NaNs stay NaN with their sign)', async () => {
    const got = new Uint32Array((await harness!.run(() => convert(u16(all16), 65536, 'F16', 'F32'))).buffer);
    const wrong = all16.filter((h) => {
      const bits = got[h]!;
      if (isNaN16(h, 'F16')) return !isNaN32(bits) || bits >>> 31 !== h >>> 15;
      return bits !== f32Bits(f16ToF32(h));
    });
    expect(wrong).toEqual([]);
  });

  it('narrows f32 to f16 round-to-nearest-even at every rounding boundary and on the special cases', async () => {
    const random = seededRandom(16);
    const inputs = [
      ...SPECIAL_F32,
      ...f16Boundaries(),
      ...Array.from({ length: 20000 }, () => (random() * 2 ** 32) >>> 0),
    ];
    const got = new Uint16Array(
      (await harness!.run(() => convert(u32(inputs), inputs.length, 'F32', 'F16'))).buffer,
    );
    const wrong = inputs
      .map((bits, i) => ({ bits, got: got[i]!, want: isNaN32(bits) ? 0x7e00 : f32ToF16(f32FromBits(bits)) }))
      .filter((c) => c.got !== c.want);
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(inputs.length).toBeGreaterThan(390_000);
  });

  it('narrows f32 to bf16 round-to-nearest-even, NaN kept a quiet NaN', async () => {
    const random = seededRandom(17);
    const inputs = [...SPECIAL_F32, ...Array.from({ length: 50000 }, () => (random() * 2 ** 32) >>> 0)];
    for (let h = 0; h < 0x7f80; h += 7)
      inputs.push((h << 16) | 0x8000, (h << 16) | 0x18000, (h << 16) | 0x7fff);
    const got = new Uint16Array(
      (await harness!.run(() => convert(u32(inputs), inputs.length, 'F32', 'BF16'))).buffer,
    );
    const wrong = inputs.filter((bits, i) => {
      const h = got[i]!;
      if (isNaN32(bits)) return !isNaN16(h, 'BF16') || (h & 0x40) === 0;
      return h !== f32ToBf16(f32FromBits(bits));
    });
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('converts every bf16 to f16 and every f16 to bf16 as widening then narrowing does', async () => {
    const toF16 = new Uint16Array(
      (await harness!.run(() => convert(u16(all16), 65536, 'BF16', 'F16'))).buffer,
    );
    const toBf16 = new Uint16Array(
      (await harness!.run(() => convert(u16(all16), 65536, 'F16', 'BF16'))).buffer,
    );
    expect(all16.filter((h) => !isNaN16(h, 'BF16') && toF16[h] !== f32ToF16(bf16ToF32(h)))).toEqual([]);
    expect(all16.filter((h) => !isNaN16(h, 'F16') && toBf16[h] !== f32ToBf16(f16ToF32(h)))).toEqual([]);
  });

  it('writes the pad half of an odd last word as 0 and nothing beyond it', async () => {
    for (const count of [1, 3, 257]) {
      const values = Array.from({ length: count }, (_, i) => 0x3f80 + i);
      const raw = await harness!.run(() => convert(u16(values), count, 'BF16', 'BF16'));
      const words = new Uint32Array(raw.buffer);
      expect(words.length).toBe(Math.ceil(count / 2));
      expect(Array.from(new Uint16Array(raw.buffer).subarray(0, count))).toEqual(values);
      expect(words[words.length - 1]! >>> 16).toBe(0);
    }
  });

  it('leaves no buffer alive', () => {
    expect(harness!.liveBuffers()).toEqual([]);
  });
});

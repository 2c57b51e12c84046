// shaders/common/quotient.wgsl against JavaScript's division rounded to f32 (a division of f32 values
// in f64 rounds to the same f32 as one correctly rounded division: 53 ≥ 2·24 + 2 bits), over the whole
// normal range: an H200 failed this with divisors above 2^126 while the correction still started from
// the GPU's own a / b. Its first guess (the GPU's division of the mantissas) is also pushed 1–3 units
// off either way, so the correction steps run on SwiftShader too, whose division is already exact.
import { afterAll, describe, expect, it } from 'vitest';
import { f32Bits, f32FromBits as f32 } from '../../methods/float32.ts';
import { mergeBytes, randomTensor, testParams } from '../../test/tensors.ts';
import { seededRandom } from '../../methods/rng.ts';
import type { MethodName } from '../../methods/types.ts';
import { openGpuHarness, withGpuEngine } from '../../test/gpu-harness.ts';
import { divisionIsExact, runQuotientKernel } from './division.ts';
import { QUOTIENT_SOURCE } from './kernels/sources.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

// The correction with its first guess moved c.z units (c.z holds an i32); unmoved, through
// exact_quotient as the merge kernels call it.
const QUOTIENT_OF = /* wgsl */ `
fn quotient_of(c: vec4<u32>) -> u32 {
  let a = bitcast<f32>(c.x);
  let b = bitcast<f32>(c.y);
  if (c.z == 0u) {
    return bitcast<u32>(exact_quotient(vec2<f32>(a), vec2<f32>(b)).x);
  }
  return bitcast<u32>(corrected_quotient(a, b, a / b, bitcast<i32>(c.z)));
}`;

const exponent = (bits: number): number => (bits >>> 23) & 0xff;

/** Whether quotient.wgsl hands back the GPU's quotient: an operand not normal, or no normal quotient. */
function keepsGpuQuotient(a: number, b: number): boolean {
  const ea = exponent(a);
  const eb = exponent(b);
  if (ea === 0 || ea === 0xff || eb === 0 || eb === 0xff) return true;
  const want = exponent(f32Bits(Math.fround(f32(a) / f32(b))));
  return want === 0 || want === 0xff;
}

/** Operands: random normal floats whose quotients are mostly normal, the edges, and merge-like sums. */
function operands(): [number, number][] {
  const random = seededRandom(0x9e3779b9);
  const word = (): number => (random() * 2 ** 32) >>> 0;
  const normal = (e: number): number => ((word() & 0x807fffff) | (e << 23)) >>> 0;
  const pairs: [number, number][] = [];
  for (let i = 0; i < 40_000; i++) {
    const ea = 1 + Math.floor(random() * 254);
    const eb = Math.min(254, Math.max(1, ea + Math.floor(random() * 60) - 30));
    pairs.push([normal(ea), normal(eb)]);
  }
  // Mantissas equal or a unit apart (quotients at and next to a power of two), extremes, 1.8 = Σw.
  for (let i = 0; i < 5_000; i++) {
    const a = normal(100 + Math.floor(random() * 50));
    const m = a & 0x7fffff;
    const e = 100 + Math.floor(random() * 50);
    for (const mb of [m, (m + 1) & 0x7fffff, (m - 1) & 0x7fffff, 0, 0x7fffff])
      pairs.push([a, ((word() & 0x80000000) | (e << 23) | mb) >>> 0]);
    pairs.push([a, f32Bits(Math.fround(1.8))], [a, f32Bits(3)], [a, f32Bits(Math.fround(0.3 + 0.5 + 1))]);
  }
  const edges = [
    0, 0x80000000, 1, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0x7fc00000, 0x3f800000,
  ];
  for (const a of edges) for (const b of edges) pairs.push([a, b]);
  return pairs;
}

describe.skipIf(!harness)(`exact f32 division in WGSL ${opened.skip ?? ''}`, () => {
  it('rounds a / b to nearest even from its first guess and from that guess 1–3 units off', async () => {
    const pairs = operands();
    const nudges = [0, 1, -1, 2, -2, 3, -3];
    const cases = new Uint32Array(pairs.length * nudges.length * 4);
    pairs.forEach(([a, b], i) =>
      nudges.forEach((nudge, j) => cases.set([a, b, nudge >>> 0, 0], (i * nudges.length + j) * 4)),
    );
    const got = await harness!.run(() =>
      runQuotientKernel(harness!.device, `${QUOTIENT_SOURCE}\n${QUOTIENT_OF}`, cases),
    );
    let normal = 0;
    const wrong: string[] = [];
    pairs.forEach(([a, b], i) =>
      nudges.forEach((nudge, j) => {
        const k = i * nudges.length + j;
        const q0 = got[2 * k]!;
        const result = got[2 * k + 1]!;
        if (keepsGpuQuotient(a, b)) {
          // The GPU's own a / b, handed back untouched.
          if (result !== q0)
            wrong.push(
              `${a.toString(16)} / ${b.toString(16)}: kept ${result.toString(16)}, q0 ${q0.toString(16)}`,
            );
          return;
        }
        normal++;
        const want = f32Bits(Math.fround(f32(a) / f32(b)));
        if (result !== want)
          wrong.push(
            `${a.toString(16)} / ${b.toString(16)} (guess ${nudge} off): ${result.toString(16)}, want ${want.toString(16)}`,
          );
      }),
    );
    expect(wrong.slice(0, 8)).toEqual([]);
    expect(normal).toBeGreaterThan(250_000);
  });

  it("finds SwiftShader dividing exactly (its division is the CPU's), so the merges skip the correction there", async () => {
    const exact = await harness!.run(() => divisionIsExact(harness!.device));
    if (/swiftshader/i.test(harness!.adapterDescription)) expect(exact).toBe(true);
    else expect(typeof exact).toBe('boolean');
  });

  // The merge kernels that divide: RAM's mean (by 3), normalised linear and TIES-family sums (by Σw).
  const DIVIDING: readonly MethodName[] = ['ram', 'linear', 'ties', 'dare_ties', 'task_arithmetic'];
  it.each(DIVIDING)(
    '%s: the merge with every quotient corrected equals the one with none, where division is exact',
    async (method) => {
      const exact = await harness!.run(() => divisionIsExact(harness!.device));
      if (!exact) return; // Then the parity test (mergekit's bytes) is the check: PARITY_ALL=1.
      const agents = 3;
      const { input } = randomTensor({
        name: 'model.layers.0.mlp.up_proj.weight',
        dtype: 'BF16',
        numel: 50_001,
        agents,
        seed: 91,
      });
      const params = { ...testParams(method, agents, 5), normalize: true };
      const merge = (correctDivision: boolean): Promise<Uint8Array> =>
        withGpuEngine(harness!, { agents, correctDivision, maxWindowElements: 20_000 }, (engine) =>
          mergeBytes(engine, input, { params, lambdas: [1.25, 0.75, 1], outDtype: 'F32' }),
        );
      const [on, off] = [await merge(true), await merge(false)];
      expect(on.byteLength).toBe(50_001 * 4);
      expect(Buffer.compare(on, off)).toBe(0);
    },
  );
});

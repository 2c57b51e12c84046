// Every op of the GPU eval backend against the f64 reference (src/eval/reference.ts) on fresh seeded
// inputs, odd sizes, every weight dtype. Each output element is checked against a bound of f32
// rounding (u = 2⁻²⁴) derived from the op's arithmetic, stated with each test; a NaN fails every bound.
// Output buffers are poisoned first (NaN buffers are released into the pool the op draws from), so an
// element the kernel never wrote fails too.
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats, type FloatDtype } from '../../format/dtype.ts';
import { seededRandom } from '../../methods/rng.ts';
import { openGpuHarness } from '../../test/gpu-harness.ts';
import type { Act, EvalBackend, StoredTensor, Weight } from '../backend.ts';
import * as ref from '../reference.ts';
import { createCpuEvalBackend } from '../cpu-backend.ts';
import { createGpuEvalBackend, type GpuEvalOptions } from './gpu-backend.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const u = 2 ** -24;
const DTYPES: readonly FloatDtype[] = ['F32', 'BF16', 'F16'];

/** f32 values in [lo, hi), never exactly 0. */
function randomF32(random: () => number, n: number, lo = -1, hi = 1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let v = 0;
    while (v === 0) v = Math.fround(lo + (hi - lo) * random());
    out[i] = v;
  }
  return out;
}

/** A stored tensor of `values` in `dtype` and the values it holds (decoded exactly). */
function stored(name: string, dtype: FloatDtype, shape: number[], values: ArrayLike<number>) {
  const tensor: StoredTensor = { name, dtype, shape, bytes: encodeFloats(dtype, values) };
  return { tensor, values: decodeFloats(dtype, tensor.bytes, values.length) };
}

const abs = (x: ref.Mat) => ref.mat(x.data.map(Math.abs), x.rows, x.cols);
const matOf = (values: ArrayLike<number>, rows: number, cols: number) =>
  ref.mat(Float64Array.from(values), rows, cols);

/** Every element within its bound (NaN never is); the first misses are listed with their index. */
function expectWithin(
  got: Float64Array,
  want: ArrayLike<number>,
  bound: (i: number) => number,
  what: string,
) {
  expect(got.length, what).toBe(want.length);
  const misses: string[] = [];
  for (let i = 0; i < want.length; i++) {
    const error = Math.abs(got[i]! - want[i]!);
    if (!(error <= bound(i))) misses.push(`[${i}] got ${got[i]} want ${want[i]} bound ${bound(i)}`);
  }
  expect(misses.slice(0, 8), `${what}: ${misses.length} of ${want.length} out of bounds`).toEqual([]);
}

/** Puts NaN-filled buffers of [rows, cols] into the pool, so the next outputs of that size start as NaN. */
function poison(gpu: EvalBackend, rows: number, cols: number): void {
  const nan = gpu.upload(new Float32Array(rows * cols).fill(NaN), rows, cols);
  const sum = gpu.add(nan, nan);
  gpu.release(nan);
  gpu.release(sum);
}

/** Runs `body` with a fresh backend in the harness's error scopes; afterwards no buffer is left alive. */
async function withBackend(body: (gpu: EvalBackend) => Promise<void>, options?: GpuEvalOptions) {
  const h = harness!;
  const gpu = createGpuEvalBackend(h.device, options);
  try {
    await h.run(() => body(gpu));
  } finally {
    gpu.destroy();
  }
  expect(h.liveBuffers()).toEqual([]);
}

async function compute(gpu: EvalBackend, result: Act): Promise<Float64Array> {
  const values = await gpu.read(result);
  gpu.release(result);
  return values;
}

describe.skipIf(!harness)(`GPU eval ops against the f64 reference ${opened.skip ?? ''}`, () => {
  // linear: a sum of `in` products in f32 plus the bias: |gpu − ref| ≤ (in + 2)·u·(Σ|x·w| + |b|),
  // the classical bound of recursive summation (an FMA only tightens it).
  const LINEAR_SHAPES = [
    { rows: 7, inF: 33, outF: 45 },
    { rows: 70, inF: 100, outF: 130 },
    { rows: 1, inF: 1, outF: 1 },
    { rows: 1, inF: 70, outF: 1 },
    { rows: 40, inF: 1, outF: 70 },
  ];
  for (const dtype of DTYPES)
    it.each(LINEAR_SHAPES)(`linear ${dtype} [$rows, $inF] · [$outF, $inF]ᵀ, with and without bias`, (s) =>
      withBackend(async (gpu) => {
        const random = seededRandom(s.rows * 1000 + s.inF * 10 + s.outF + dtype.length);
        const x = randomF32(random, s.rows * s.inF);
        const w = stored('w', dtype, [s.outF, s.inF], randomF32(random, s.outF * s.inF));
        // The bias in another dtype than W: each is decoded by its own code.
        const biasDtype = dtype === 'F32' ? 'BF16' : 'F32';
        const b = stored('b', biasDtype, [s.outF], randomF32(random, s.outF, -2, 2));
        const [weight, bias] = [await gpu.weight(w.tensor), await gpu.weight(b.tensor)];
        const input = gpu.upload(x, s.rows, s.inF);
        const xm = matOf(x, s.rows, s.inF);
        const wm = matOf(w.values, s.outF, s.inF);
        for (const withBias of [false, true]) {
          poison(gpu, s.rows, s.outF);
          const got = await compute(gpu, gpu.linear(input, weight, withBias ? bias : undefined));
          const want = ref.linear(xm, wm, withBias ? b.values : undefined);
          const magnitude = ref.linear(abs(xm), abs(wm), withBias ? b.values.map(Math.abs) : undefined);
          expectWithin(
            got,
            want.data,
            (i) => (s.inF + 2) * u * magnitude.data[i]!,
            `linear bias=${withBias}`,
          );
        }
      }),
    );

  it.each(DTYPES)('linear %s with W split by rows over buffers of at most 256 bytes', (dtype) =>
    withBackend(
      async (gpu) => {
        // Rows of 33 elements (66 or 132 bytes): 3 or 1 rows per block, blocks that end mid-word.
        const random = seededRandom(41 + dtype.length);
        const [rows, inF, outF] = [9, 33, 45];
        const x = randomF32(random, rows * inF);
        const w = stored('w', dtype, [outF, inF], randomF32(random, outF * inF));
        const b = stored('b', dtype, [outF], randomF32(random, outF));
        const got = await compute(
          gpu,
          gpu.linear(gpu.upload(x, rows, inF), await gpu.weight(w.tensor), await gpu.weight(b.tensor)),
        );
        const [xm, wm] = [matOf(x, rows, inF), matOf(w.values, outF, inF)];
        const want = ref.linear(xm, wm, b.values);
        const magnitude = ref.linear(abs(xm), abs(wm), b.values.map(Math.abs));
        expectWithin(got, want.data, (i) => (inF + 2) * u * magnitude.data[i]!, 'split linear');
      },
      { maxBufferBytes: 256 },
    ),
  );

  // RMSNorm: Σx² of positive terms (relative error ≤ dim·u), then /dim, +eps, sqrt, 1/·, two products,
  // each a few ulps (WGSL: division 2.5, sqrt ≈ 4.5): |gpu − ref| ≤ (dim + 16)·u·|ref|.
  for (const dtype of DTYPES)
    it(`rmsNorm and groupRmsNorm, ${dtype} weights`, () =>
      withBackend(async (gpu) => {
        const random = seededRandom(7 + dtype.length);
        for (const [rows, cols, dim] of [
          [5, 300, 300],
          [3, 40, 10],
          [4, 7, 7],
        ] as const) {
          const x = randomF32(random, rows * cols, -3, 3);
          const w = stored('norm', dtype, [dim], randomF32(random, dim, 0.5, 1.5));
          const weight = await gpu.weight(w.tensor);
          const input = gpu.upload(x, rows, cols);
          poison(gpu, rows, cols);
          const op =
            dim === cols ? gpu.rmsNorm(input, weight, 1e-5) : gpu.groupRmsNorm(input, weight, dim, 1e-6);
          const got = await compute(gpu, op);
          const want = ref.groupRmsNorm(matOf(x, rows, cols), w.values, dim, dim === cols ? 1e-5 : 1e-6);
          expectWithin(
            got,
            want.data,
            (i) => (dim + 16) * u * Math.abs(want.data[i]!),
            `rmsNorm ${rows}×${cols}/${dim}`,
          );
          gpu.release(input);
          gpu.release(weight);
        }
      }));

  // rope: a·c − b·s and b·c + a·s: |gpu − ref| ≤ 4u·(|a·c| + |b·s|).
  it('rope on 3 heads of size 10 with a table per row', () =>
    withBackend(async (gpu) => {
      const random = seededRandom(11);
      const [rows, heads, headDim] = [7, 3, 10];
      const half = headDim / 2;
      const x = randomF32(random, rows * heads * headDim, -2, 2);
      const angles = Array.from(
        { length: rows * half },
        (_, i) => (i / half + 1) * 10 ** (-(i % half) / half) * 1.7,
      );
      const cos = Float32Array.from(angles, Math.cos);
      const sin = Float32Array.from(angles, Math.sin);
      poison(gpu, rows, heads * headDim);
      const got = await compute(gpu, gpu.rope(gpu.upload(x, rows, heads * headDim), cos, sin, headDim));
      const xm = matOf(x, rows, heads * headDim);
      const want = ref.rope(xm, cos, sin, headDim);
      // Both outputs of a pair are bounded by the same |a·c| + |b·s|.
      const magnitude = new Float64Array(x.length);
      for (let r = 0; r < rows; r++)
        for (let head = r * heads * headDim; head < (r + 1) * heads * headDim; head += headDim)
          for (let i = 0; i < half; i++) {
            const [c, sn] = [cos[r * half + i]!, sin[r * half + i]!];
            const sum = Math.abs(x[head + i]! * c) + Math.abs(x[head + i + half]! * sn);
            magnitude[head + i] = magnitude[head + i + half] = sum;
          }
      expectWithin(got, want.data, (i) => 4 * u * magnitude[i]!, 'rope');
    }));

  // Attention. Each score s_j = scale·q·k_j is off by at most E = (hd + 1)·u·scale·Σ|q·k_j|; each
  // exp(s_j − m) then carries a relative error ≤ E + (5 + 2|s_j − m|)·u (WGSL's exp: 3 + 2|x| ulp), and
  // the weighted sums add (keys + 8)·u. A relative error ε on every weight moves Σp·v/Σp by at most
  // 2ε·Σp̂(|v| + |o|), so |gpu − ref| ≤ 2·(2ε + (keys + 8)·u)·Σ_j p̂_j(|v_j| + |o|), with a factor 2 of
  // slack for the second-order terms.
  function attentionBound(
    q: ref.Mat,
    k: ref.Mat,
    v: ref.Mat,
    out: ref.Mat,
    seqStart: Int32Array,
    shape: ref.AttentionParams,
  ): Float64Array {
    const { heads, kvHeads, headDim: hd, scale, window } = shape;
    const bound = new Float64Array(out.data.length);
    for (let r = 0; r < q.rows; r++) {
      const first = ref.firstKey(seqStart[r]!, r, window);
      for (let h = 0; h < heads; h++) {
        const qo = r * q.cols + h * hd;
        const kvo = Math.floor(h / (heads / kvHeads)) * hd;
        const s: number[] = [];
        const e: number[] = [];
        for (let j = first; j <= r; j++) {
          let dot = 0;
          let mag = 0;
          for (let d = 0; d < hd; d++) {
            dot += q.data[qo + d]! * k.data[j * k.cols + kvo + d]!;
            mag += Math.abs(q.data[qo + d]! * k.data[j * k.cols + kvo + d]!);
          }
          s.push(scale * dot);
          e.push((hd + 1) * u * scale * mag);
        }
        const m = Math.max(...s);
        const p = s.map((x) => Math.exp(x - m));
        const total = p.reduce((a, b) => a + b, 0);
        const epsilon = Math.max(...s.map((x, i) => e[i]! + (5 + 2 * Math.abs(x - m)) * u));
        for (let d = 0; d < hd; d++) {
          const o = Math.abs(out.data[qo + d]!);
          let spread = 0;
          for (let j = first; j <= r; j++)
            spread += (p[j - first]! / total) * (Math.abs(v.data[j * v.cols + kvo + d]!) + o);
          bound[qo + d] = 2 * (2 * epsilon + (r - first + 9) * u) * spread;
        }
      }
    }
    return bound;
  }

  const ATTENTION_CASES = [
    { heads: 4, kvHeads: 2, headDim: 16, window: 0 },
    { heads: 4, kvHeads: 1, headDim: 16, window: 0 },
    { heads: 4, kvHeads: 4, headDim: 16, window: 5 },
    { heads: 4, kvHeads: 2, headDim: 16, window: 66 },
    { heads: 2, kvHeads: 1, headDim: 72, window: 0 },
  ];
  it.each(ATTENTION_CASES)(
    'attention over sequences of 5, 1 and 70 rows: $heads heads on $kvHeads kv heads of $headDim, window $window',
    (c) =>
      withBackend(async (gpu) => {
        const random = seededRandom(c.heads * 100 + c.kvHeads * 10 + c.headDim + c.window);
        const lengths = [5, 1, 70];
        const seqStart = Int32Array.from(
          lengths.flatMap((n, i) => Array<number>(n).fill(lengths.slice(0, i).reduce((a, b) => a + b, 0))),
        );
        const rows = seqStart.length;
        const shape = { ...c, scale: 1 / Math.sqrt(c.headDim) };
        const q = randomF32(random, rows * c.heads * c.headDim, -2, 2);
        const k = randomF32(random, rows * c.kvHeads * c.headDim, -2, 2);
        const v = randomF32(random, rows * c.kvHeads * c.headDim);
        const [qa, ka, va] = [
          gpu.upload(q, rows, c.heads * c.headDim),
          gpu.upload(k, rows, c.kvHeads * c.headDim),
          gpu.upload(v, rows, c.kvHeads * c.headDim),
        ];
        poison(gpu, rows, c.heads * c.headDim);
        const got = await compute(gpu, gpu.attention(qa, ka, va, { seqStart }, shape));
        const [qm, km, vm] = [
          matOf(q, rows, c.heads * c.headDim),
          matOf(k, rows, c.kvHeads * c.headDim),
          matOf(v, rows, c.kvHeads * c.headDim),
        ];
        const want = ref.attention(qm, km, vm, seqStart, shape);
        const bound = attentionBound(qm, km, vm, want, seqStart, shape);
        expectWithin(got, want.data, (i) => bound[i]!, 'attention');
      }),
  );

  // siluMul: exp (3 + 2|g| ulp), 1 + ·, division (2.5 ulp), product: |gpu − ref| ≤ (10 + 2|g|)·u·|ref|.
  // add: one rounding of an exact sum, so the GPU must give fround(a + b) exactly. gather copies.
  it('siluMul, add and gather on [7, 45]', () =>
    withBackend(async (gpu) => {
      const random = seededRandom(23);
      const [rows, cols] = [7, 45];
      const a = randomF32(random, rows * cols, -6, 6);
      const b = randomF32(random, rows * cols, -2, 2);
      const [am, bm] = [matOf(a, rows, cols), matOf(b, rows, cols)];
      const [aa, ba] = [gpu.upload(a, rows, cols), gpu.upload(b, rows, cols)];
      poison(gpu, rows, cols);
      const silu = await compute(gpu, gpu.siluMul(aa, ba));
      const wantSilu = ref.siluMul(am, bm);
      expectWithin(
        silu,
        wantSilu.data,
        (i) => (10 + 2 * Math.abs(a[i]!)) * u * Math.abs(wantSilu.data[i]!),
        'siluMul',
      );
      poison(gpu, rows, cols);
      const sum = await compute(gpu, gpu.add(aa, ba));
      expect(Array.from(sum)).toEqual(Array.from(ref.add(am, bm).data, Math.fround));
      const picks = Int32Array.from([6, 0, 3, 3, 1]);
      poison(gpu, picks.length, cols);
      const gathered = await compute(gpu, gpu.gather(aa, picks));
      expect(Array.from(gathered)).toEqual(Array.from(ref.gather(am, picks).data));
    }));

  it('attention with rows × heads over 65535 workgroups (a 2-D dispatch)', () =>
    withBackend(async (gpu) => {
      // 16 400 one-row sequences × 4 heads: each row sees only itself, so the output is its v.
      const [rows, heads, headDim] = [16_400, 4, 2];
      const random = seededRandom(99);
      const v = randomF32(random, rows * headDim);
      const x = randomF32(random, rows * heads * headDim);
      const seqStart = Int32Array.from({ length: rows }, (_, r) => r);
      const kv = gpu.upload(v, rows, headDim);
      const shape = { heads, kvHeads: 1, headDim, scale: 1, window: 0 };
      const got = await compute(
        gpu,
        gpu.attention(gpu.upload(x, rows, heads * headDim), kv, kv, { seqStart }, shape),
      );
      const want = Float64Array.from(
        { length: got.length },
        (_, i) => v[Math.floor(i / (heads * headDim)) * headDim + (i % headDim)]!,
      );
      expect(got).toEqual(want);
    }));

  // score. Logits are a linear's (error E_l ≤ (cols + 2)·u·Σ|x·w|); logprob = t − LSE is 2-Lipschitz
  // in them, and the sum Σexp(l − m) adds a relative (n + 8 + chunks·(6 + 2·range))·u (exp's
  // 3 + 2|x| ulp, the sum, the rescaling per chunk; range = max − min logit): |Δlogprob| ≤
  // 2·max E_l + that. The margin m − m2 is off by at most 2·max E_l; argmax must match wherever the
  // reference's top two differ by more than that, and exact ties must give the lowest id and margin 0.
  const SCORE_SPLITS: { name: string; options?: GpuEvalOptions }[] = [
    { name: 'whole chunks' },
    {
      name: 'chunks split over 200-byte buffers and 5-logit spans',
      options: { maxBufferBytes: 200, maxLogitsBytes: 6 * 4 * 5 },
    },
  ];
  for (const dtype of DTYPES)
    it.each(SCORE_SPLITS)(`score ${dtype} over 3 chunks in either order, $name`, ({ options }) =>
      withBackend(async (gpu) => {
        const random = seededRandom(5 + dtype.length);
        const [rows, cols, vocab] = [6, 20, 200];
        const bounds = [0, 64, 130, 200];
        // Rows 0–2 are positive and ids 3, 10 and 150 all-ones rows: their logit Σx beats every other
        // (|w| < 1), a three-way tie across chunks 0 and 2. Rows 3–5 are generic.
        const x = randomF32(random, rows * cols);
        for (let i = 0; i < 3 * cols; i++) x[i] = Math.abs(x[i]!) + 0.1;
        const wValues = randomF32(random, vocab * cols);
        for (const id of [3, 10, 150]) wValues.fill(1, id * cols, (id + 1) * cols);
        const targets = Int32Array.from([150, 100, 5, 199, -1, 64]);
        const chunks = [];
        for (let c = 0; c < 3; c++) {
          const [start, end] = [bounds[c]!, bounds[c + 1]!];
          const w = stored(
            `lm_head.${c}`,
            dtype,
            [end - start, cols],
            wValues.subarray(start * cols, end * cols),
          );
          chunks.push({ start, w, weight: await gpu.weight(w.tensor) });
        }
        const input = gpu.upload(x, rows, cols);
        const xm = matOf(x, rows, cols);
        for (const order of [
          [0, 1, 2],
          [2, 1, 0],
        ]) {
          const state = gpu.scoreStart(targets);
          const want = ref.scoreStart(targets);
          const maxError = new Float64Array(rows);
          const low = new Float64Array(rows).fill(Infinity);
          for (const c of order) {
            const { start, w, weight } = chunks[c]!;
            gpu.scoreChunk(state, input, weight, start);
            const wm = matOf(w.values, w.tensor.shape[0]!, cols);
            const logits = ref.linear(xm, wm);
            ref.scoreChunk(want, logits, start);
            const magnitude = ref.linear(abs(xm), abs(wm));
            for (let i = 0; i < logits.data.length; i++) {
              const r = Math.floor(i / wm.rows);
              maxError[r] = Math.max(maxError[r]!, (cols + 2) * u * magnitude.data[i]!);
              low[r] = Math.min(low[r]!, logits.data[i]!);
            }
          }
          const got = await gpu.scoreRead(state);
          gpu.release(state);
          const expected = ref.scoreRead(want);
          for (let r = 0; r < rows; r++) {
            const e = maxError[r]!;
            const range = want.m[r]! - low[r]!;
            const where = `row ${r}, order ${order.join('')}`;
            if (targets[r]! < 0) expect(got.logprob[r], where).toBeNaN();
            else
              expect(Math.abs(got.logprob[r]! - expected.logprob[r]!), where).toBeLessThanOrEqual(
                2 * e + (vocab + 8 + 3 * (6 + 2 * range)) * u,
              );
            expect(Math.abs(got.margin[r]! - expected.margin[r]!), where).toBeLessThanOrEqual(2 * e);
            if (r < 3) {
              expect([got.argmax[r], got.margin[r]], where).toEqual([3, 0]);
              expect([expected.argmax[r], expected.margin[r]], where).toEqual([3, 0]);
            } else if (expected.margin[r]! > 2 * e) expect(got.argmax[r], where).toBe(expected.argmax[r]);
          }
        }
        expect(targets.some((t) => t >= 130)).toBe(true);
      }, options),
    );

  it('a score state before any chunk: argmax −1, logprob and margin NaN, as the reference', () =>
    withBackend(async (gpu) => {
      const got = await gpu.scoreRead(gpu.scoreStart(Int32Array.from([4, -1])));
      const want = ref.scoreRead(ref.scoreStart(Int32Array.from([4, -1])));
      expect(Array.from(got.argmax)).toEqual(Array.from(want.argmax));
      expect([...got.logprob, ...got.margin].every(Number.isNaN)).toBe(true);
      expect([...want.logprob, ...want.margin].every(Number.isNaN)).toBe(true);
    }));
});

describe.skipIf(!harness)(`GPU eval backend lifetime ${opened.skip ?? ''}`, () => {
  const live = (prefix: string) => harness!.liveBuffers().filter((label) => label.startsWith(prefix)).length;

  it('reuses released activations (memory stays bounded) and destroys them beyond the pool', async () => {
    for (const poolBytes of [undefined, 0])
      await withBackend(
        async (gpu) => {
          const random = seededRandom(3);
          const w = await gpu.weight(stored('w', 'BF16', [9, 8], randomF32(random, 72)).tensor);
          let x = gpu.upload(randomF32(random, 5 * 8), 5, 8);
          const first = await gpu.read(gpu.linear(x, w));
          for (let i = 0; i < 50; i++) {
            const y = gpu.linear(x, w);
            const z = gpu.gather(y, Int32Array.from([0, 1, 2, 3, 4]));
            gpu.release(y);
            const zeros = gpu.upload(new Float32Array(40), 5, 8);
            const picked = gpu.gather(zeros, Int32Array.from([0, 1, 2, 3, 4]));
            const sum = gpu.add(x, picked);
            for (const done of [x, z, zeros, picked]) gpu.release(done);
            x = sum;
          }
          // x was only ever added zeros to: the same linear as at first.
          expect(await gpu.read(gpu.linear(x, w))).toEqual(first);
          await gpu.flush();
          if (poolBytes === 0) expect(live('eval.linear') + live('eval.gather')).toBeLessThanOrEqual(3);
          else expect(live('eval.linear') + live('eval.gather') + live('eval.add')).toBeLessThanOrEqual(8);
        },
        { poolBytes },
      );
  });

  it('names an activation used after release and a weight too wide for one buffer', () =>
    withBackend(
      async (gpu) => {
        const x = gpu.upload(Float32Array.from([1, 2]), 1, 2);
        gpu.release(x);
        expect(() => gpu.add(x, x)).toThrow(/after release/);
        await expect(
          gpu.weight(stored('wide', 'F32', [2, 40], new Float32Array(80).fill(1)).tensor),
        ).rejects.toThrow(/wide: a row of 160 bytes does not fit a 128-byte buffer/);
      },
      { maxBufferBytes: 128 },
    ));
});

/** One decoder block and a two-chunk score, through the EvalBackend interface alone. */
async function decoderBlock(backend: EvalBackend, tensors: Record<string, StoredTensor>, x: Float32Array) {
  const [rows, hidden, heads, kvHeads, headDim] = [9, 24, 4, 2, 6];
  const layout = { seqStart: Int32Array.from([0, 0, 0, 0, 4, 4, 4, 4, 4]) };
  const positions = Array.from(layout.seqStart, (start, r) => r - start);
  const angles = positions.flatMap((p) =>
    Array.from({ length: headDim / 2 }, (_, i) => p * 10000 ** (-(2 * i) / headDim)),
  );
  const [cos, sin] = [Float32Array.from(angles, Math.cos), Float32Array.from(angles, Math.sin)];
  const w: Record<string, Weight> = {};
  for (const [name, tensor] of Object.entries(tensors)) w[name] = await backend.weight(tensor);
  const h = backend.upload(x, rows, hidden);
  const n = backend.rmsNorm(h, w.norm!, 1e-6);
  const q = backend.rope(
    backend.groupRmsNorm(backend.linear(n, w.wq!, w.bq), w.qNorm!, headDim, 1e-6),
    cos,
    sin,
    headDim,
  );
  const k = backend.rope(backend.linear(n, w.wk!), cos, sin, headDim);
  const a = backend.attention(q, k, backend.linear(n, w.wv!), layout, {
    heads,
    kvHeads,
    headDim,
    scale: headDim ** -0.5,
    window: 3,
  });
  const h2 = backend.add(h, backend.linear(a, w.wo!));
  const m = backend.siluMul(backend.linear(h2, w.wg!), backend.linear(h2, w.wu!));
  const h3 = backend.add(h2, backend.linear(m, w.wd!));
  const last = backend.gather(h3, Int32Array.from([3, 8]));
  const state = backend.scoreStart(Int32Array.from([17, 2]));
  backend.scoreChunk(state, last, w.head0!, 0);
  backend.scoreChunk(state, last, w.head1!, 10);
  return { hidden: await backend.read(h3), score: await backend.scoreRead(state) };
}

describe.skipIf(!harness)(`GPU and CPU eval backends through one decoder block ${opened.skip ?? ''}`, () => {
  it('agree to f32 accuracy on a Qwen-like BF16 block (bias, q_norm, GQA, window, two sequences)', () =>
    withBackend(
      async (gpu) => {
        const random = seededRandom(2024);
        const [hidden, heads, kvHeads, headDim, inter] = [24, 4, 2, 6, 40];
        const shapes: Record<string, number[]> = {
          norm: [hidden],
          wq: [heads * headDim, hidden],
          bq: [heads * headDim],
          qNorm: [headDim],
          wk: [kvHeads * headDim, hidden],
          wv: [kvHeads * headDim, hidden],
          wo: [hidden, heads * headDim],
          wg: [inter, hidden],
          wu: [inter, hidden],
          wd: [hidden, inter],
          head0: [10, hidden],
          head1: [15, hidden],
        };
        const tensors: Record<string, StoredTensor> = {};
        for (const [name, shape] of Object.entries(shapes)) {
          const count = shape.reduce((a, b) => a * b, 1);
          const norm = name.toLowerCase().includes('norm');
          tensors[name] = stored(
            name,
            'BF16',
            shape,
            randomF32(random, count, norm ? 0.5 : -0.4, norm ? 1.5 : 0.4),
          ).tensor;
        }
        const x = randomF32(random, 9 * hidden);
        const got = await decoderBlock(gpu, tensors, x);
        const want = await decoderBlock(createCpuEvalBackend(), tensors, x);
        // Values are O(1) after a dozen f32 ops of ≤ 40 terms: 1e-5 of the largest is ~100 ulps.
        const scale = Math.max(...want.hidden.map(Math.abs));
        expectWithin(got.hidden, want.hidden, () => 1e-5 * scale, 'block output');
        expectWithin(got.score.logprob, want.score.logprob, () => 1e-5 * scale, 'logprob');
        expect(Array.from(got.score.argmax)).toEqual(Array.from(want.score.argmax));
        expect(Math.min(...want.score.margin)).toBeGreaterThan(1e-3);
      },
      { maxBufferBytes: 512 },
    ));
});

// The f64 reference on cases small enough to work out by hand: what the GPU kernels are held to.
import { describe, expect, it } from 'vitest';
import * as ref from './reference.ts';

const m = (rows: number, cols: number, values: number[]) => ref.mat(Float64Array.from(values), rows, cols);
const list = (x: ref.Mat) => Array.from(x.data);

function closeTo(got: ArrayLike<number>, want: number[], digits = 12) {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, digits));
}

describe('rmsNorm', () => {
  it('maps a constant row to the weight (eps 0), whatever the constant and its sign', () => {
    expect(list(ref.rmsNorm(m(1, 4, [3, 3, 3, 3]), [1, 2, 0.5, -1], 0))).toEqual([1, 2, 0.5, -1]);
    closeTo(ref.rmsNorm(m(1, 3, [-7, -7, -7]), [1, 1, 2], 0).data, [-1, -1, -2]);
  });

  it('divides by sqrt(mean(x²) + eps) per row', () => {
    // Row 0: mean(9, 16) = 12.5; row 1: mean(1, 1) + 2 = 3.
    const got = ref.rmsNorm(m(2, 2, [3, 4, 1, -1]), [1, 10], 0);
    closeTo(got.data.subarray(0, 2), [3 / Math.sqrt(12.5), 40 / Math.sqrt(12.5)]);
    closeTo(ref.rmsNorm(m(1, 2, [1, -1]), [1, 1], 2).data, [1 / Math.sqrt(3), -1 / Math.sqrt(3)]);
  });

  it('normalises each group of a row on its own (per head)', () => {
    // Groups [1, 1] and [2, -2], and [4, 0]: rms 1, 2, sqrt(8).
    const got = ref.groupRmsNorm(m(1, 6, [1, 1, 2, -2, 4, 0]), [1, 3], 2, 0);
    closeTo(got.data, [1, 3, 1, -3, 4 / Math.sqrt(8), 0]);
    expect(() => ref.groupRmsNorm(m(1, 6, [1, 1, 2, -2, 4, 0]), [1, 3, 1, 1], 4, 0)).toThrow(
      /does not divide/,
    );
  });
});

describe('linear', () => {
  it('computes x · Wᵀ + bias with W stored [out, in]', () => {
    const w = m(3, 2, [3, 4, 5, 6, 7, 8]);
    expect(list(ref.linear(m(2, 2, [1, 2, 0, -1]), w, [1, 0, -1]))).toEqual([12, 17, 22, -3, -6, -9]);
    expect(list(ref.linear(m(1, 2, [1, 2]), w))).toEqual([11, 17, 23]);
  });

  it('names a weight whose in-features do not match', () => {
    expect(() => ref.linear(m(1, 3, [1, 2, 3]), m(1, 2, [1, 1]))).toThrow(/3 columns/);
  });
});

describe('rope (rotate_half)', () => {
  it('is the identity at position 0 (cos 1, sin 0)', () => {
    const x = m(1, 8, [1, -2, 3, 0.5, 7, 8, -9, 10]);
    expect(list(ref.rope(x, [1, 1], [0, 0], 4))).toEqual(list(x));
  });

  it('pairs x_i with x_{i+headDim/2} in each head and rotates by the row own angle', () => {
    // headDim 4: pairs (x0, x2) and (x1, x3). Row 0 turns a quarter (c 0, s 1): (a, b) → (−b, a).
    // Row 1 turns by its own table: (1, 0) by cos 0.6, sin 0.8 → (0.6, 0.8).
    const x = m(2, 4, [1, 2, 3, 4, 1, 0, 0, 0]);
    const got = ref.rope(x, [0, 0, 0.6, 1], [1, 1, 0.8, 0], 4);
    closeTo(got.data, [-3, -4, 1, 2, 0.6, 0, 0.8, 0]);
  });
});

describe('attention', () => {
  const shape = { heads: 1, kvHeads: 1, headDim: 2, scale: 1, window: 0 };

  it('returns v of the only key a sequence start sees, and averages keys of equal score', () => {
    // Two sequences: rows 0–1 and row 2. q of row 1 is 0: both keys score 0, weight ½ each.
    const q = m(3, 2, [5, 5, 0, 0, -3, 2]);
    const k = m(3, 2, [1, 2, 3, 4, 5, 6]);
    const v = m(3, 2, [10, 20, 30, 40, 50, 60]);
    const got = ref.attention(q, k, v, Int32Array.from([0, 0, 2]), shape);
    expect(list(got)).toEqual([10, 20, 20, 30, 50, 60]);
  });

  it('weights the keys by softmax(scale · q·k)', () => {
    // Row 1: scores 0.5·(1·0) = 0 and 0.5·(1·2·ln 3) = ln 3: weights ¼ and ¾.
    const q = m(2, 2, [0, 0, 1, 0]);
    const k = m(2, 2, [0, 1, 2 * Math.log(3), 0]);
    const v = m(2, 2, [4, 8, 0, -4]);
    const got = ref.attention(q, k, v, Int32Array.from([0, 0]), { ...shape, scale: 0.5 });
    closeTo(got.data.subarray(2), [1, 2 - 3]);
  });

  it('reads kv head ⌊h / (heads / kvHeads)⌋ and masks keys outside the window', () => {
    // 4 query heads on 2 kv heads of size 1; window 1: every row sees itself only, so each head
    // returns its kv head's v of the same row.
    const q = m(2, 4, [1, 2, 3, 4, 5, 6, 7, 8]);
    const k = m(2, 2, [1, 1, 1, 1]);
    const v = m(2, 2, [10, 20, 30, 40]);
    const gqa = { heads: 4, kvHeads: 2, headDim: 1, scale: 1, window: 1 };
    expect(list(ref.attention(q, k, v, Int32Array.from([0, 0]), gqa))).toEqual([
      10, 10, 20, 20, 30, 30, 40, 40,
    ]);
    // Window 2 lets row 1 see row 0 again: equal keys, so the mean of the two v.
    const wide = ref.attention(q, k, v, Int32Array.from([0, 0]), { ...gqa, window: 2 });
    expect(list(wide).slice(4)).toEqual([20, 20, 30, 30]);
  });

  it('rejects a layout that is not contiguous sequences', () => {
    const x = m(2, 2, [1, 2, 3, 4]);
    expect(() => ref.attention(x, x, x, Int32Array.from([0, 2]), shape)).toThrow(/seqStart\[1\] = 2/);
    expect(() => ref.attention(x, x, x, Int32Array.from([0, 0, 0]), shape)).toThrow(/3 values, expected 2/);
  });
});

describe('element-wise and gather', () => {
  it('siluMul: x / (1 + e^−x) times up', () => {
    const got = ref.siluMul(m(1, 3, [0, 1, -2]), m(1, 3, [5, 2, 1]));
    closeTo(got.data, [0, 2 / (1 + Math.exp(-1)), -2 / (1 + Math.exp(2))]);
    expect(got.data[1]).toBeCloseTo(1.4621171572600098, 14);
  });

  it('add and gather', () => {
    expect(list(ref.add(m(1, 2, [1, 2]), m(1, 2, [10, -20])))).toEqual([11, -18]);
    expect(list(ref.gather(m(3, 2, [1, 2, 3, 4, 5, 6]), [2, 0, 2]))).toEqual([5, 6, 1, 2, 5, 6]);
    expect(() => ref.gather(m(1, 1, [1]), [1])).toThrow(/outside/);
  });
});

describe('score (online log-sum-exp over vocabulary chunks)', () => {
  it('gives log softmax of the target: logits [0, ln 3] put ¾ on id 1', () => {
    const state = ref.scoreStart(Int32Array.from([1, 0, -1]));
    ref.scoreChunk(state, m(3, 2, [0, Math.log(3), 0, Math.log(3), 5, 1]), 0);
    const got = ref.scoreRead(state);
    closeTo(got.logprob.subarray(0, 2), [Math.log(0.75), Math.log(0.25)]);
    expect(got.logprob[2]).toBeNaN();
    expect(Array.from(got.argmax)).toEqual([1, 1, 0]);
    closeTo(got.margin, [Math.log(3), Math.log(3), 4]);
  });

  it('over several chunks, in any order, equals one chunk', () => {
    const logits = [0.5, -1, 2, 7, 3, 6.5, -2, 1, 0, 4];
    const whole = ref.scoreStart(Int32Array.from([8]));
    ref.scoreChunk(whole, m(1, 10, logits), 0);
    const want = ref.scoreRead(whole);
    expect(want.argmax[0]).toBe(3);
    expect(want.margin[0]).toBe(0.5);
    const wantLogprob = 0 - Math.log(logits.reduce((s, l) => s + Math.exp(l), 0));
    expect(want.logprob[0]).toBeCloseTo(wantLogprob, 13);
    for (const order of [
      [0, 4, 7],
      [7, 4, 0],
      [4, 0, 7],
    ]) {
      const bounds = [0, 4, 7, 10];
      const state = ref.scoreStart(Int32Array.from([8]));
      for (const start of order) {
        const end = bounds[bounds.indexOf(start) + 1]!;
        ref.scoreChunk(state, m(1, end - start, logits.slice(start, end)), start);
      }
      const got = ref.scoreRead(state);
      expect(got.argmax[0]).toBe(3);
      expect(got.margin[0]).toBe(0.5);
      expect(got.logprob[0]).toBeCloseTo(wantLogprob, 13);
    }
  });

  it('breaks an argmax tie to the lowest id, within a chunk and across chunks, with margin 0', () => {
    const logits = [1, 5, 2, 5, 5, 0];
    for (const order of [
      [0, 3],
      [3, 0],
    ]) {
      const state = ref.scoreStart(Int32Array.from([0]));
      for (const start of order) ref.scoreChunk(state, m(1, 3, logits.slice(start, start + 3)), start);
      const got = ref.scoreRead(state);
      expect(got.argmax[0]).toBe(1);
      expect(got.margin[0]).toBe(0);
    }
    // A tie inside the second chunk only (ids 3 and 4, above id 1's 4).
    const state = ref.scoreStart(Int32Array.from([0]));
    ref.scoreChunk(state, m(1, 2, [4, 1]), 0);
    ref.scoreChunk(state, m(1, 3, [0, 6, 6]), 2);
    expect(ref.scoreRead(state).argmax[0]).toBe(3);
  });

  it('leaves the target NaN when its chunk never came', () => {
    const state = ref.scoreStart(Int32Array.from([9]));
    ref.scoreChunk(state, m(1, 2, [1, 2]), 0);
    expect(ref.scoreRead(state).logprob[0]).toBeNaN();
  });
});

import { describe, expect, it } from 'vitest';
import type { MethodParams } from './types.ts';
import { defaultParams } from './defaults.ts';
import { referenceMerge, referenceStats, topKTaus, type TensorValues } from './reference.ts';
import { ramLambdas, sumStats } from './stats.ts';
import { magnitudeKey } from './float32.ts';

// SPEC.md "Worked example": base all zeros, N = 3, one 3×3 tensor, stored as f32.
const f32 = (rows: number[][]): Float64Array => Float64Array.from(rows.flat(), Math.fround);
const example: TensorValues = {
  name: 'example',
  dtype: 'F32',
  base: new Float64Array(9),
  agents: [
    f32([
      [0, 0.3, 0],
      [0.6, 0.7, 0],
      [0.1, 0, 0],
    ]),
    f32([
      [0, 0.7, 0],
      [0.5, 0.8, 0.2],
      [0, 0, 0],
    ]),
    f32([
      [0, 0.5, 0],
      [0.4, 0.9, 0],
      [0, 0, 0.1],
    ]),
  ],
};

function expectValues(got: Float64Array, want: number[][]): void {
  const flat = want.flat();
  expect(got.length).toBe(flat.length);
  // Inputs are f32 roundings of the listed decimals, so agreement is to f32 precision.
  got.forEach((v, i) => expect(v).toBeCloseTo(flat[i]!, 6));
}

describe('the SPEC.md worked example through the reference', () => {
  const stats = referenceStats(example, 1e-5);
  const totals = sumStats([stats]);

  it('counts c = [[0,3,0],[3,3,1],[1,0,1]]: 3 shared and 1 unique per agent, ρ = 3', () => {
    expect(stats.counts).toEqual([3, 3, 0, 3]);
    expect(stats.overlap).toEqual([
      [1, 0, 3],
      [1, 0, 3],
      [1, 0, 3],
    ]);
    expect(stats.changed).toEqual([4, 4, 4]);
    expect(stats.unique).toEqual([1, 1, 1]);
    expect(stats.signConflicts).toBe(0);
    expect(totals.shared).toEqual([3, 3, 3]);
    expect(totals.rho).toEqual([3, 3, 3]);
    expect(stats.pairs).toEqual([
      [4, 3, 3],
      [3, 4, 3],
      [3, 3, 4],
    ]);
    expect(totals.pairs).toEqual(stats.pairs);
  });

  it('merges RAM to [[0,.5,0],[.5,.8,.2],[.1,0,.1]]', () => {
    expectValues(referenceMerge(example, defaultParams('ram', 3), [1, 1, 1]), [
      [0, 0.5, 0],
      [0.5, 0.8, 0.2],
      [0.1, 0, 0.1],
    ]);
  });

  it('merges RAM+ (r = .1, α = 2: λ = 1.2) to [[0,.5,0],[.5,.8,.24],[.12,0,.12]]', () => {
    const lambdas = ramLambdas(totals, 'ramplus', 0.1, 2);
    expect(lambdas).toEqual([1.2, 1.2, 1.2]);
    expectValues(referenceMerge(example, defaultParams('ramplus', 3), lambdas), [
      [0, 0.5, 0],
      [0.5, 0.8, 0.24],
      [0.12, 0, 0.12],
    ]);
  });

  it('gives RAM+s (r = .1) λ = 1.075', () => {
    const lambdas = ramLambdas(totals, 'ramplus_soft', 0.1, 2);
    lambdas.forEach((l) => expect(l).toBeCloseTo(1.075, 12));
    expectValues(referenceMerge(example, defaultParams('ramplus_soft', 3), lambdas), [
      [0, 0.5, 0],
      [0.5, 0.8, 0.215],
      [0.1075, 0, 0.1075],
    ]);
  });

  it('dilutes the unique entries to .0667, .0333, .0333 with task arithmetic at weight 1/3', () => {
    const params: MethodParams = { ...defaultParams('task_arithmetic', 3), weights: [1 / 3, 1 / 3, 1 / 3] };
    const merged = referenceMerge(example, params, []);
    expect(merged[5]).toBeCloseTo(0.0667, 4);
    expect(merged[6]).toBeCloseTo(0.0333, 4);
    expect(merged[8]).toBeCloseTo(0.0333, 4);
    expect(merged[1]).toBeCloseTo(0.5, 6);
  });

  it('keeps exactly the base where nothing changed, for every method that starts from it', () => {
    for (const method of ['ram', 'ramplus_tl', 'task_arithmetic', 'ties', 'dare_ties'] as const) {
      const merged = referenceMerge(example, defaultParams(method, 3), [1, 1, 1]);
      expect([merged[0], merged[2], merged[7]]).toEqual([0, 0, 0]);
    }
  });
});

describe('reference details that fix the contract', () => {
  const values: TensorValues = {
    name: 't',
    dtype: 'F32',
    base: Float64Array.from([1, 1, 1, 1, 0, 0]),
    agents: [
      Float64Array.from([1.5, 0.5, 1.25, 1, 0.25, -0.25]),
      Float64Array.from([0.5, 1.5, 1, 1.25, 0.25, 0]),
    ],
  };

  it('TIES keeps exactly k = floor(density·numel) entries, equal |τ| lowest index first', () => {
    const taus = topKTaus(values, [0.5, 1 / 3]);
    // Agent 0: |τ| = .5 .5 .25 0 .25 .25, k = 3: both .5, then the first .25 (index 2).
    expect(Array.from(taus.values[0]!)).toEqual([0.5, -0.5, 0.25, 0, 0, 0]);
    // Agent 1: |τ| = .5 .5 0 .25 .25 0, k = 2.
    expect(Array.from(taus.values[1]!)).toEqual([-0.5, 0.5, 0, 0, 0, 0]);
  });

  it('TIES elects +1 on an exact tie, and a zero never agrees', () => {
    const params: MethodParams = { ...defaultParams('ties', 2), density: [1, 1], normalize: true };
    const merged = referenceMerge(values, params, []);
    // Element 0: τ = +.5 and −.5, vote 0 ≥ 0 elects +: only agent 0 agrees.
    expect(merged[0]).toBe(1.5);
    expect(merged[1]).toBe(1.5);
    // Element 5: τ = −.25 and 0: elected −, the zero does not dilute the mean.
    expect(merged[5]).toBe(-0.25);
  });

  it('compares the f32 |τ| with the real ε (SPEC: the largest f32 ≤ ε), never with the nearest f32', () => {
    // ε just below an f32: the nearest f32 to ε equals |τ| and would drop it, but |τ| > ε exactly.
    const at = Math.fround(1e-5);
    const eps = at * (1 - 2 ** -30);
    const v: TensorValues = {
      name: 'e',
      dtype: 'F32',
      base: new Float64Array(3),
      agents: [Float64Array.from([at, -at * 1.5, at / 2])],
    };
    expect(referenceStats(v, eps).counts).toEqual([1, 2]);
    // ε = 1e-3 lies below its nearest f32: an element at exactly fround(1e-3) is a change.
    const f = Math.fround(1e-3);
    expect(f).toBeGreaterThan(1e-3);
    const w: TensorValues = { ...v, agents: [Float64Array.from([f, -f, 1e-3 / 2])] };
    expect(referenceStats(w, 1e-3).counts).toEqual([1, 2]);
    // ε that is an f32 itself stays strict: |τ| = ε is no change.
    expect(referenceStats({ ...v, agents: [Float64Array.from([at, -at, 0])] }, at).counts).toEqual([3, 0]);
    expect(magnitudeKey(-2)).toBe(magnitudeKey(2));
  });
});

describe('reference pair counts', () => {
  // Two elements, each changed by two of four agents: {0,1},{2,3} and {0,2},{1,3} have the same
  // counts and overlap tables but different pairs.
  const values = (sets: number[][], agents: number): TensorValues => ({
    name: 'pairs',
    dtype: 'F32',
    base: new Float64Array(sets.length),
    agents: Array.from({ length: agents }, (_, t) =>
      Float64Array.from(sets, (set) => (set.includes(t) ? 1 : 0)),
    ),
  });

  it('tells apart sets that the counts cannot', () => {
    const a = referenceStats(
      values(
        [
          [0, 1],
          [2, 3],
        ],
        4,
      ),
      1e-5,
    );
    const b = referenceStats(
      values(
        [
          [0, 2],
          [1, 3],
        ],
        4,
      ),
      1e-5,
    );
    expect(a.counts).toEqual(b.counts);
    expect(a.overlap).toEqual(b.overlap);
    expect(a.pairs).toEqual([
      [1, 1, 0, 0],
      [1, 1, 0, 0],
      [0, 0, 1, 1],
      [0, 0, 1, 1],
    ]);
    expect(b.pairs).toEqual([
      [1, 0, 1, 0],
      [0, 1, 0, 1],
      [1, 0, 1, 0],
      [0, 1, 0, 1],
    ]);
  });

  it('counts every pair of a set of all 8 agents, and none for 9', () => {
    const all = [0, 1, 2, 3, 4, 5, 6, 7];
    const eight = referenceStats(values([all, [3], []], 8), 1e-5);
    expect(eight.pairs!.map((row) => row.reduce((x, y) => x + y, 0))).toEqual([8, 8, 8, 9, 8, 8, 8, 8]);
    expect(eight.pairs![3]![3]).toBe(2);
    expect(eight.pairs![3]![5]).toBe(1);
    expect(referenceStats(values([[...all, 8]], 9), 1e-5).pairs).toBeUndefined();
  });

  it('counts each element once under the bitmask of its changing agents, up to 8 agents', () => {
    const all = [0, 1, 2, 3, 4, 5, 6, 7];
    const stats = referenceStats(values([all, [3], [], [0, 2], [0, 2], [7]], 8), 1e-5);
    const want = new Array<number>(256).fill(0);
    want[255] = 1;
    want[0b1000] = 1;
    want[0] = 1;
    want[0b101] = 2;
    want[0b10000000] = 1;
    expect(stats.sets).toEqual(want);
    expect(stats.sets![0]).toBe(stats.counts[0]);
    expect(referenceStats(values([[...all, 8]], 9), 1e-5).sets).toBeUndefined();
  });
});

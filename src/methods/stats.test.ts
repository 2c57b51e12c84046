import { describe, expect, it } from 'vitest';
import type { TensorStats } from './tensors.ts';
import { ulpOf } from './float32.ts';
import {
  deriveTensorStats,
  emptyTensorStats,
  MAGNITUDE_BINS,
  magnitudeBin,
  PAIRS_MAX_AGENTS,
  ramLambdas,
  sumStats,
  tensorLocalLambdas,
} from './stats.ts';

/** Statistics of one tensor from its overlap table (what the λ depend on). */
function withOverlap(overlap: number[][]): TensorStats {
  const s = emptyTensorStats('t', 'BF16', 100, overlap.length);
  s.overlap = overlap;
  return deriveTensorStats(s);
}

describe('RAM-family λ edge cases (SPEC.md)', () => {
  // Agent 0: 2 unique, 6 shared (ρ = 3); agent 1: only shared (ρ = +∞); agent 2: nothing changed.
  const totals = sumStats([
    withOverlap([
      [2, 6, 0],
      [0, 4, 2],
      [0, 0, 0],
    ]),
  ]);

  it('derives shared and ρ, +∞ without unique elements and 0 without any change', () => {
    expect(totals.changed).toEqual([8, 6, 0]);
    expect(totals.shared).toEqual([6, 6, 0]);
    expect(totals.rho).toEqual([3, Infinity, 0]);
  });

  it('RAM is λ = 1 for everyone', () => {
    expect(ramLambdas(totals, 'ram', 0.1, 2)).toEqual([1, 1, 1]);
  });

  it('RAM+ clips ρ to α (+∞ too) and leaves an unchanged agent at 1', () => {
    expect(ramLambdas(totals, 'ramplus', 0.1, 2)).toEqual([1.2, 1.2, 1]);
    expect(ramLambdas(totals, 'ramplus', 0.1, 5)).toEqual([1 + 0.1 * 3, 1 + 0.1 * 5, 1]);
  });

  it('RAM+s is 1 + r·shared/changed', () => {
    expect(ramLambdas(totals, 'ramplus_soft', 0.1, 2)).toEqual([1 + (0.1 * 6) / 8, 1.1, 1]);
  });

  it('tensor-local RAM+ divides by max(unique, ε) and clips to α', () => {
    const local = withOverlap([
      [4, 1, 0],
      [0, 1, 0],
      [0, 0, 0],
    ]);
    expect(tensorLocalLambdas(local, 0.1, 0.2, 1e-5)).toEqual([1 + 0.1 * 0.2, 1.02, 1]);
    expect(tensorLocalLambdas(withOverlap([[10, 1]]), 0.1, 0.2, 1e-5)).toEqual([1 + 0.1 * 0.1]);
    expect(tensorLocalLambdas(local, 0.1, 0.2, 0)).toEqual([1.02, 1.02, 1]);
  });
});

describe('sumStats', () => {
  it('adds integer counts of every tensor', () => {
    const a = withOverlap([
      [1, 2],
      [3, 2],
    ]);
    a.counts = [10, 4, 2];
    a.signConflicts = 1;
    a.magnitude[0]![5] = 3;
    a.oneUlp = [1, 0];
    const b = withOverlap([
      [0, 1],
      [5, 1],
    ]);
    b.counts = [7, 5, 1];
    b.magnitude[0]![5] = 1;
    b.oneUlp = [0, 2];
    const total = sumStats([a, b]);
    expect(total.numel).toBe(200);
    expect(total.tensors).toBe(2);
    expect(total.counts).toEqual([17, 9, 3]);
    expect(total.overlap).toEqual([
      [1, 3],
      [8, 3],
    ]);
    expect(total.unique).toEqual([1, 8]);
    expect(total.signConflicts).toBe(1);
    expect(total.magnitude[0]![5]).toBe(4);
    expect(total.oneUlp).toEqual([1, 2]);
    // pairs: each tensor's diagonal is its changed counts, off-diagonal left at 0 here.
    expect(total.pairs).toEqual([
      [4, 0],
      [0, 11],
    ]);
  });

  it('sums pairs only when every tensor has them', () => {
    const a = withOverlap([
      [1, 2],
      [3, 2],
    ]);
    a.pairs![0]![1] = 2;
    a.pairs![1]![0] = 2;
    const b = withOverlap([
      [0, 1],
      [5, 1],
    ]);
    b.pairs![0]![1] = 1;
    b.pairs![1]![0] = 1;
    expect(sumStats([a, b]).pairs).toEqual([
      [4, 3],
      [3, 11],
    ]);
    delete b.pairs;
    expect(sumStats([a, b]).pairs).toBeUndefined();
    expect(emptyTensorStats('t', 'F32', 1, PAIRS_MAX_AGENTS).pairs).toHaveLength(8);
    expect(emptyTensorStats('t', 'F32', 1, PAIRS_MAX_AGENTS + 1).pairs).toBeUndefined();
  });

  it('rejects statistics of another agent count', () => {
    expect(() => sumStats([withOverlap([[1]])], 2)).toThrow(RangeError);
  });
});

describe('magnitude bins', () => {
  it('are 49 binary-exponent bins from below 2^-39 to 2^8 and above, contiguous', () => {
    expect(MAGNITUDE_BINS.length).toBe(49);
    expect(MAGNITUDE_BINS[0]).toEqual({ exponent: -40, lower: 0, upper: 2 ** -39 });
    expect(MAGNITUDE_BINS[48]).toEqual({ exponent: 8, lower: 256, upper: Infinity });
    for (let b = 1; b < MAGNITUDE_BINS.length; b++)
      expect(MAGNITUDE_BINS[b]!.lower).toBe(MAGNITUDE_BINS[b - 1]!.upper);
  });

  it('bin each f32 |τ| by its exponent field, edges included', () => {
    expect(magnitudeBin(1)).toBe(40);
    expect(magnitudeBin(Math.fround(1.999999))).toBe(40);
    expect(magnitudeBin(0.5)).toBe(39);
    expect(magnitudeBin(-0.75)).toBe(39);
    expect(magnitudeBin(2 ** -39)).toBe(1);
    expect(magnitudeBin(2 ** -45)).toBe(0);
    expect(magnitudeBin(1e-45)).toBe(0);
    expect(magnitudeBin(300)).toBe(48);
    expect(magnitudeBin(Infinity)).toBe(48);
    for (const bin of MAGNITUDE_BINS.slice(1, -1)) {
      expect(MAGNITUDE_BINS[magnitudeBin(bin.lower)]).toBe(bin);
    }
  });
});

describe('ulpOf', () => {
  it('is the spacing of the dtype at the value, subnormal spacing at zero', () => {
    expect(ulpOf(1, 'BF16')).toBe(2 ** -7);
    expect(ulpOf(1.5, 'F16')).toBe(2 ** -10);
    expect(ulpOf(-3, 'F32')).toBe(2 ** -22);
    expect(ulpOf(0, 'BF16')).toBe(2 ** -133);
    expect(ulpOf(0, 'F16')).toBe(2 ** -24);
    expect(ulpOf(2 ** -20, 'F16')).toBe(2 ** -24);
    expect(ulpOf(0, 'F32')).toBe(2 ** -149);
    expect(ulpOf(Infinity, 'F32')).toBeNaN();
  });
});

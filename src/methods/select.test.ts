import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  KEEP_NONE,
  RADIX_DIGITS,
  settleSingleKey,
  startTopK,
  stepTopK,
  topKCount,
  topKKept,
  type TopKState,
} from './select.ts';

/**
 * The radix select as the engines run it: histogram passes, then ties counted in index order. With
 * `bounds`, as the GPU runs it: the first pass also keeps each bin's least and greatest lower bits, and
 * a bin of one key settles the select without the second pass (`passes` counts them).
 */
function streamingKept(keys: readonly number[], k: number, bounds = false, passes = { n: 0 }): boolean[] {
  let state: TopKState = startTopK(k, keys.length);
  RADIX_DIGITS.forEach(({ shift, bits }, digit) => {
    if (!state.searching) return;
    passes.n++;
    const histogram = new Uint32Array(1 << bits);
    const least = new Map<number, number>();
    const greatest = new Map<number, number>();
    const high = shift + bits;
    for (const key of keys) {
      if (key !== 0 && key >>> high === state.prefix >>> high) {
        const bin = (key >>> shift) & ((1 << bits) - 1);
        histogram[bin]!++;
        const low = key & (2 ** shift - 1);
        least.set(bin, Math.min(least.get(bin) ?? Infinity, low));
        greatest.set(bin, Math.max(greatest.get(bin) ?? -Infinity, low));
      }
    }
    state = stepTopK(state, histogram, digit);
    if (bounds && digit === 0 && state.searching) {
      const bin = (state.prefix >>> shift) & ((1 << bits) - 1);
      state = settleSingleKey(state, least.get(bin) ?? NaN, greatest.get(bin) ?? NaN);
    }
  });
  expect(state.searching).toBe(false);
  let ties = 0;
  return keys.map((key) => topKKept(state, key, key === state.threshold ? ties++ : 0));
}

/** What the select must equal: sort by key descending, index ascending, keep the first k non-zero. */
function sortedKept(keys: readonly number[], k: number): boolean[] {
  const order = keys.map((_, i) => i).sort((a, b) => keys[b]! - keys[a]! || a - b);
  const kept = keys.map(() => false);
  for (const i of order.slice(0, k)) if (keys[i] !== 0) kept[i] = true;
  return kept;
}

describe('TIES radix select', () => {
  it('keeps exactly the sort-based top k, ties lowest index first', () => {
    // Keys from a small set (many exact ties, zeros, values sharing high digits) or any 31-bit value.
    const key = fc.oneof(
      fc.constantFrom(0, 1, 2, 0x3c000000, 0x3c000001, 0x3c100000, 0x7f800000, 0x7fffffff, 1023, 1024),
      fc.integer({ min: 0, max: 0x7fffffff }),
    );
    fc.assert(
      fc.property(
        fc.array(key, { minLength: 1, maxLength: 300 }),
        // Whole percents: fast-check's doubles fall mostly on 0 and the bounds, where nothing is searched.
        fc.integer({ min: 0, max: 120 }),
        (keys, percent) => {
          const k = topKCount(percent / 100, keys.length);
          expect(streamingKept(keys, k)).toEqual(sortedKept(keys, k));
          expect(streamingKept(keys, k, true)).toEqual(sortedKept(keys, k));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('settles from the first digit alone when its bin holds one key, else takes the second', () => {
    // Keys sharing their first digit (top 16 bits) and differing only below it, or equal.
    const key = fc.oneof(
      fc.constantFrom(0, 0x3c000000, 0x3c000001, 0x3c007fff, 0x3c008000, 0x3c010000, 0x3b808000),
      fc.integer({ min: 0x3c000000, max: 0x3c00ffff }),
      fc.integer({ min: 0, max: 0x7fffffff }),
    );
    let settledInOne = 0;
    let tookTwo = 0;
    fc.assert(
      fc.property(
        // Few distinct keys, so the threshold's bin often holds a single one.
        fc
          .array(key, { minLength: 1, maxLength: 5 })
          .chain((pool) => fc.array(fc.constantFrom(...pool), { minLength: 1, maxLength: 300 })),
        fc.integer({ min: 1, max: 99 }),
        (keys, percent) => {
          const k = topKCount(percent / 100, keys.length);
          const passes = { n: 0 };
          expect(streamingKept(keys, k, true, passes)).toEqual(sortedKept(keys, k));
          if (passes.n === 1) settledInOne++;
          if (passes.n === 2) tookTwo++;
        },
      ),
      { numRuns: 200 },
    );
    // Both ways of settling were exercised.
    expect(settledInOne).toBeGreaterThan(5);
    expect(tookTwo).toBeGreaterThan(5);
  });

  it('settles a bin of one key at that key, keeping its first ties', () => {
    const state = stepTopK(startTopK(3, 10), [0, 0, 5], 0);
    expect(state).toMatchObject({ searching: true, need: 3, prefix: 2 << 15 });
    expect(settleSingleKey(state, 7, 7)).toEqual({
      searching: false,
      need: 0,
      prefix: 0,
      threshold: (2 << 15) | 7,
      tiesToKeep: 3,
    });
    expect(settleSingleKey(state, 6, 7)).toBe(state);
  });

  it('settles without any pass when nothing or everything is kept', () => {
    expect(startTopK(0, 10)).toMatchObject({ searching: false, threshold: KEEP_NONE, tiesToKeep: 0 });
    expect(startTopK(10, 10)).toMatchObject({ searching: false, threshold: 0, tiesToKeep: 0 });
    expect(topKKept(startTopK(0, 10), 0x7fffffff, 0)).toBe(false);
  });

  it('counts k = floor(density·numel)', () => {
    expect(topKCount(0.5, 7)).toBe(3);
    expect(topKCount(1, 7)).toBe(7);
    expect(topKCount(1.5, 7)).toBe(7);
    expect(topKCount(0.01, 7)).toBe(0);
    expect(() => topKCount(NaN, 7)).toThrow(RangeError);
  });

  it('breaks a tie at the last digit by index', () => {
    const keys = [5, 9, 5, 5, 9, 0];
    expect(streamingKept(keys, 3)).toEqual([true, true, false, false, true, false]);
  });
});

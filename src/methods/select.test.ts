import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  KEEP_NONE,
  RADIX_DIGITS,
  startTopK,
  stepTopK,
  topKCount,
  topKKept,
  type TopKState,
} from './select.ts';

/** The radix select as the engines run it: histogram passes, then ties counted in index order. */
function streamingKept(keys: readonly number[], k: number): boolean[] {
  let state: TopKState = startTopK(k, keys.length);
  RADIX_DIGITS.forEach(({ shift, bits }, digit) => {
    if (!state.searching) return;
    const histogram = new Array<number>(1 << bits).fill(0);
    const high = shift + bits;
    for (const key of keys) {
      if (key !== 0 && key >>> high === state.prefix >>> high)
        histogram[(key >>> shift) & ((1 << bits) - 1)]!++;
    }
    state = stepTopK(state, histogram, digit);
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
        fc.double({ min: 0, max: 1.2, noNaN: true }),
        (keys, density) => {
          const k = topKCount(density, keys.length);
          expect(streamingKept(keys, k)).toEqual(sortedKept(keys, k));
        },
      ),
      { numRuns: 400 },
    );
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

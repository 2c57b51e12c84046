// The sampled select's host logic against a plain sort: a threshold key guessed from a random sample
// and settled from exact counts (computed here by brute force) must keep exactly the top-k that
// sorting every key gives, ties lowest index first; a guess that misses must say so, never guess on.
import { describe, expect, it } from 'vitest';
import { chooseBracket, exactTopK, settleBracket, sortedKeys, type Bracket } from './topk-bracket.ts';
import { NO_KEY } from './kernels/topk_sample.ts';
import { topKKept, type TopKState } from '../methods/select.ts';
import { seededRandom } from '../methods/test-tensors.ts';
import { at } from '../io/checked.ts';

/** Keys as bf16 weights give them: zeros, then a few distinct magnitudes with long runs of ties. */
function tiedKeys(n: number, distinct: number, zeros: number, seed: number): Uint32Array {
  const random = seededRandom(seed);
  const values = Array.from({ length: distinct }, (_, i) => 0x38000000 + (i + 1) * 0x10000);
  return Uint32Array.from({ length: n }, () =>
    random() < zeros ? 0 : at(values, Math.floor(random() ** 2 * distinct)),
  );
}

/** The top-k mask by sorting (index order breaks ties), independent of the select's code. */
function sortedMask(keys: Uint32Array, k: number): boolean[] {
  const order = Array.from(keys.keys())
    .filter((i) => at(keys, i) !== 0)
    .sort((a, b) => at(keys, b) - at(keys, a) || a - b);
  const mask = new Array<boolean>(keys.length).fill(false);
  for (const i of order.slice(0, k)) mask[i] = true;
  return mask;
}

/** The mask a settled state keeps, ranking ties by index as the merge kernels do. */
function stateMask(keys: Uint32Array, state: TopKState): boolean[] {
  let ties = 0;
  return Array.from(keys, (key) => {
    if (key === 0) return false;
    const rank = key === state.threshold ? ties++ : 0;
    return topKKept(state, key, rank);
  });
}

/** What the count pass would return for a bracket, by brute force. */
function countBracket(keys: Uint32Array, b: Bracket): { above: number; equal: number } {
  let above = 0;
  let equal = 0;
  for (const key of keys) {
    if (key > b.key) above++;
    else if (key === b.key) equal++;
  }
  return { above, equal };
}

function sample(keys: Uint32Array, size: number, seed: number): Uint32Array {
  const random = seededRandom(seed);
  const out = Uint32Array.from({ length: size }, () => at(keys, Math.floor(random() * keys.length)));
  // Slots past a window's end come back as NO_KEY and must be ignored.
  return Uint32Array.from([...out, NO_KEY, NO_KEY]);
}

describe('exactTopK', () => {
  it('keeps what sorting keeps, at every k from one to more than the non-zero keys', () => {
    const keys = tiedKeys(3_000, 6, 0.4, 1);
    const sorted = sortedKeys(keys);
    for (const k of [1, 2, 17, 500, 1_000, 1_799, 1_800, 2_999]) {
      const state = exactTopK(sorted, k);
      expect(state.searching).toBe(false);
      expect(stateMask(keys, state)).toEqual(sortedMask(keys, k));
    }
  });
});

describe('chooseBracket and settleBracket', () => {
  for (const distinct of [3, 12, 400])
    it(`settle exactly or say they missed (${distinct} distinct keys)`, () => {
      let guessed = 0;
      let settled = 0;
      let trials = 0;
      for (let seed = 1; seed <= 6; seed++) {
        const keys = tiedKeys(20_000, distinct, 0.3, seed);
        const sorted = sortedKeys(sample(keys, 4_000, seed + 100));
        for (const density of [0.01, 0.2, 0.5, 0.69, 0.9]) {
          const k = Math.floor(density * keys.length);
          trials++;
          const bracket = chooseBracket(sorted, k, keys.length);
          if (!bracket) continue;
          guessed++;
          const state = settleBracket(bracket, countBracket(keys, bracket), k);
          if (!state) continue;
          settled++;
          expect(stateMask(keys, state)).toEqual(sortedMask(keys, k));
        }
      }
      // Few distinct keys: mostly a guess, and right. Hundreds: the sample mostly sees several keys
      // around k's rank and does not guess (it still does where k falls among the zeros).
      if (distinct <= 3) expect(settled / trials).toBeGreaterThan(0.6);
      if (distinct >= 400) expect(guessed).toBeLessThan(trials / 2);
      expect(settled).toBeGreaterThanOrEqual(guessed * 0.9);
    });

  it('reports a miss when the keys above already make k, or the guess and those above fall short', () => {
    const bracket: Bracket = { key: 40 };
    expect(settleBracket(bracket, { above: 10, equal: 3 }, 10)).toBeNull();
    expect(settleBracket(bracket, { above: 2, equal: 3 }, 10)).toBeNull();
    expect(settleBracket(bracket, { above: 2, equal: 8 }, 10)).toEqual(
      expect.objectContaining({ searching: false, threshold: 39, tiesToKeep: 0 }),
    );
    expect(settleBracket(bracket, { above: 2, equal: 30 }, 10)).toEqual(
      expect.objectContaining({ searching: false, threshold: 40, tiesToKeep: 8 }),
    );
  });

  it('keeps every non-zero key when the sample shows fewer than k of them', () => {
    const keys = tiedKeys(10_000, 5, 0.9, 7);
    const k = 5_000;
    const bracket = chooseBracket(sortedKeys(sample(keys, 2_000, 8)), k, keys.length);
    expect(bracket).toEqual({ key: 0 });
    const state = bracket && settleBracket(bracket, countBracket(keys, bracket), k);
    expect(state && stateMask(keys, state)).toEqual(sortedMask(keys, k));
  });
});

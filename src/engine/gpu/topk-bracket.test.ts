// The sampled select's host logic against a plain sort: a bracket of the threshold key from a random
// sample, settled from exact counts and the keys between its ends (computed here by brute force),
// must keep exactly the top-k that sorting every key gives, ties lowest index first; a bracket that
// misses, or keys between that did not all come back, must say so, never guess on.
import { describe, expect, it } from 'vitest';
import {
  chooseBracket,
  exactTopK,
  needsBetween,
  settleBracket,
  tieChunk,
  rankKeys,
  type Bracket,
  type BracketCounts,
} from './topk-bracket.ts';
import { NO_KEY } from './kernels/topk_sample.ts';
import { countOrder, countPassPays } from './topk-select.ts';
import { topKKept, type TopKState } from '../../methods/select.ts';
import { seededRandom } from '../../methods/rng.ts';
import { at } from '../../io/checked.ts';

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

/** What the count pass would return for a bracket, by brute force: its counts and the keys between. */
function countBracket(keys: Uint32Array, b: Bracket): { counts: BracketCounts; between: Uint32Array } {
  const counts = { above: 0, equalHi: 0, equalLo: 0, between: 0 };
  const between: number[] = [];
  for (const key of keys) {
    if (key > b.hi) counts.above++;
    if (key === b.hi) counts.equalHi++;
    if (key === b.lo) counts.equalLo++;
    if (key > b.lo && key < b.hi) between.push(key);
  }
  counts.between = between.length;
  return { counts, between: Uint32Array.from(between) };
}

/** settleBracket as the select calls it: the keys between only where they are needed. */
function settle(keys: Uint32Array, b: Bracket, k: number): { state: TopKState | null; between: boolean } {
  const { counts, between } = countBracket(keys, b);
  const wanted = needsBetween(b, counts, k);
  return { state: settleBracket(b, counts, wanted ? between : null, k), between: wanted };
}

function sample(keys: Uint32Array, size: number, seed: number): Uint32Array {
  const random = seededRandom(seed);
  const out = Uint32Array.from({ length: size }, () => at(keys, Math.floor(random() * keys.length)));
  // Slots past a window's end come back as NO_KEY and must be ignored.
  return Uint32Array.from([...out, NO_KEY, NO_KEY]);
}

/** chooseBracket's rule on a plain sort of the sample: the keys 3σ + 4 ranks either side of k's. */
function sortedBracket(sampled: Uint32Array, k: number, numel: number): Bracket {
  const keys = Array.from(sampled)
    .filter((key) => key !== NO_KEY)
    .sort((a, b) => b - a);
  const q = k / numel;
  const rank = q * keys.length;
  const spread = Math.ceil(3 * Math.sqrt(keys.length * q * (1 - q)) + 4);
  const top = Math.max(0, Math.floor(rank) - spread);
  const bottom = Math.min(keys.length - 1, Math.ceil(rank) + spread);
  const hi = at(keys, top);
  const lo = at(keys, bottom);
  const inside = keys.slice(top, bottom + 1).filter((key) => key < hi && key > lo).length;
  return { hi, lo, between: Math.ceil((inside / keys.length) * numel) };
}

describe('rankKeys', () => {
  /** The keys descending, NO_KEY dropped, by a plain sort. */
  const sorted = (sample: Uint32Array): number[] =>
    Array.from(sample)
      .filter((key) => key !== NO_KEY)
      .sort((a, b) => b - a);

  it('gives every rank, and the keys above and equal to any key, as sorting does; NO_KEY slots dropped', () => {
    const random = seededRandom(41);
    // Runs of bf16-like keys, keys that differ only in their low 16 bits (one bin, many keys), zeros.
    const sample = Uint32Array.from({ length: 6_000 }, () => {
      const r = random();
      if (r < 0.1) return NO_KEY;
      if (r < 0.25) return 0;
      if (r < 0.6) return 0x3c000000 + Math.floor(random() * 40) * 0x10000;
      return 0x3c280000 + Math.floor(random() * 3000);
    });
    const copy = sample.slice();
    const ranked = rankKeys(sample);
    const expected = sorted(sample);
    expect(ranked.length).toBe(expected.length);
    expected.forEach((key, rank) => expect(ranked.keyAt(rank)).toBe(key));
    expect(ranked.keyAt(expected.length)).toBe(0);
    expect(ranked.keyAt(-1)).toBe(0);
    for (const key of [...new Set(expected)]
      .slice(0, 400)
      .concat([0x3c27ffff, 0x3c280000 + 3001, 0x7f000000])) {
      expect(ranked.above(key)).toBe(expected.filter((k) => k > key).length);
      expect(ranked.equal(key)).toBe(expected.filter((k) => k === key).length);
    }
    expect(sample).toEqual(copy);
    expect(rankKeys(Uint32Array.from([NO_KEY, NO_KEY])).length).toBe(0);
  });
});

describe('exactTopK', () => {
  it('keeps what sorting keeps, at every k from one to more than the non-zero keys', () => {
    const keys = tiedKeys(3_000, 6, 0.4, 1);
    const ranked = rankKeys(keys);
    for (const k of [1, 2, 17, 500, 1_000, 1_799, 1_800, 2_999, 3_000]) {
      const state = exactTopK(ranked, k);
      expect(state.searching).toBe(false);
      expect(stateMask(keys, state)).toEqual(sortedMask(keys, k));
    }
  });
});

describe('chooseBracket and settleBracket', () => {
  for (const distinct of [3, 12, 400, 5_000])
    it(`settle exactly or say they missed (${distinct} distinct keys)`, () => {
      let settled = 0;
      let fromBetween = 0;
      let trials = 0;
      for (let seed = 1; seed <= 6; seed++) {
        const keys = tiedKeys(20_000, distinct, 0.3, seed);
        const ranked = rankKeys(sample(keys, 4_000, seed + 100));
        for (const density of [0.01, 0.2, 0.5, 0.69, 0.9]) {
          const k = Math.floor(density * keys.length);
          trials++;
          const bracket = chooseBracket(ranked, k, keys.length);
          expect(bracket).toEqual(sortedBracket(sample(keys, 4_000, seed + 100), k, keys.length));
          if (!bracket) continue;
          const { state, between } = settle(keys, bracket, k);
          if (!state) continue;
          settled++;
          if (between) fromBetween++;
          expect(stateMask(keys, state)).toEqual(sortedMask(keys, k));
        }
      }
      // Three standard deviations each side: a bracket misses rarely, whatever the keys.
      expect(settled / trials).toBeGreaterThan(0.9);
      // Few distinct keys: the threshold mostly lies on one end's run; many: among the keys between.
      if (distinct <= 3) expect(fromBetween).toBeLessThan(trials / 2);
      if (distinct >= 400) expect(fromBetween).toBeGreaterThan(trials / 2);
    });

  it('reports a miss when the keys above already make k, or the bracket and those above fall short', () => {
    const one: Bracket = { hi: 40, lo: 40, between: 0 };
    const counts = (above: number, equalHi: number, equalLo = equalHi, between = 0): BracketCounts => ({
      above,
      equalHi,
      equalLo,
      between,
    });
    expect(settleBracket(one, counts(10, 3), null, 10)).toBeNull();
    expect(settleBracket(one, counts(2, 3), null, 10)).toBeNull();
    expect(settleBracket(one, counts(2, 8), null, 10)).toEqual(
      expect.objectContaining({ searching: false, threshold: 39, tiesToKeep: 0 }),
    );
    expect(settleBracket(one, counts(2, 30), null, 10)).toEqual(
      expect.objectContaining({ searching: false, threshold: 40, tiesToKeep: 8 }),
    );
    const range: Bracket = { hi: 40, lo: 30, between: 3 };
    // k on lo's run, after every key between.
    expect(settleBracket(range, counts(2, 3, 9, 3), null, 10)).toEqual(
      expect.objectContaining({ searching: false, threshold: 30, tiesToKeep: 2 }),
    );
    // k among the keys between: settled from them, and only when every one of them came back.
    const between = Uint32Array.from([33, 35, 33, 31]);
    expect(settleBracket(range, counts(2, 3, 9, 4), between, 7)).toEqual(
      expect.objectContaining({ searching: false, threshold: 33, tiesToKeep: 1 }),
    );
    expect(settleBracket(range, counts(2, 3, 9, 5), between, 7)).toBeNull();
    expect(settleBracket(range, counts(2, 3, 9, 4), null, 7)).toBeNull();
    // k past lo's run: the bracket missed.
    expect(settleBracket(range, counts(2, 3, 1, 4), between, 11)).toBeNull();
  });

  it('keeps every non-zero key when the sample shows fewer than k of them', () => {
    const keys = tiedKeys(10_000, 5, 0.9, 7);
    const k = 5_000;
    const bracket = chooseBracket(rankKeys(sample(keys, 2_000, 8)), k, keys.length);
    expect(bracket).toEqual({ hi: 0, lo: 0, between: 0 });
    const state = bracket && settle(keys, bracket, k).state;
    expect(state && stateMask(keys, state)).toEqual(sortedMask(keys, k));
  });
});

describe('tieChunk', () => {
  it('finds the chunk of the first tie not kept, with the ties before it, by walking the ties one by one', () => {
    const random = seededRandom(31);
    const ties = Uint32Array.from({ length: 40 }, () => (random() < 0.3 ? 0 : Math.floor(random() * 50)));
    // The chunk of each tie, listed tie by tie: an independent count of where tie `keep` lies.
    const owner = Array.from(ties).flatMap((n, chunk) => new Array<number>(n).fill(chunk));
    for (let keep = 0; keep < owner.length; keep++) {
      const chunk = at(owner, keep);
      const before = owner.indexOf(chunk);
      const found = tieChunk(ties, keep);
      if (keep === before) expect(found).toBeNull();
      else expect(found).toEqual({ chunk, before });
    }
    expect(tieChunk(ties, owner.length)).toBeNull();
  });
});

describe('countOrder and countPassPays', () => {
  const one: Bracket = { hi: 9, lo: 9, between: 0 };
  const range: Bracket = { hi: 9, lo: 5, between: 100 };
  it('count the rows that collect first and the one-key rows after them, leaving out rows without a bracket', () => {
    expect(countOrder([range, one, null, one, range, one])).toEqual([0, 4, 1, 3, 5]);
    expect(countOrder([null, null])).toEqual([]);
  });
  it('take dispatches of four rows (two units where one collects) up to the radix pass and the marks it spares', () => {
    expect(countPassPays([one, one, range])).toBe(true);
    expect(countPassPays([one, one, one, one, one, one])).toBe(true);
    // Ranges in both groups of four as the rows stand, in one dispatch once ordered: 2 + 1 units.
    expect(countPassPays([range, one, one, one, range, one])).toBe(true);
    // Model Breadcrumbs, three agents: three one-key kept rows and three outlier rows that collect.
    expect(countPassPays([one, one, one, range, range, range])).toBe(true);
    // Five ranges fill two collecting dispatches: four units, more than the radix pass and the marks.
    expect(countPassPays([range, range, range, range, range, one])).toBe(false);
    // Rows without a bracket are not counted.
    expect(countPassPays([range, null, null, null, null, null, null, null, one])).toBe(true);
    expect(countPassPays([one, null, one, null, one, null, one, null, one, one, one, one, one])).toBe(true);
    // Thirteen one-key rows: four dispatches.
    expect(countPassPays(new Array<Bracket>(13).fill(one))).toBe(false);
  });
});

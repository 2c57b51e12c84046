// The host's side of the sampled TIES select (topk_sample.wgsl, topk_count.wgsl): from a sample of an
// agent's |τ| keys, the bracket [lo, hi] its top-k threshold should lie in (on bf16 weights |τ| takes
// few distinct values, and a threshold often falls inside one long run of equal keys: lo = hi); then,
// from the exact counts of one pass (keys above hi, equal to hi, equal to lo) and the keys it collected
// strictly between lo and hi, the threshold and its ties, or null where the bracket missed and the
// radix select (topk_hist) must settle it. Pure functions: the GPU plumbing is in topk-select.ts.

import { NO_KEY } from './kernels/topk_sample.ts';
import { settled, type TopKState } from '../../methods/select.ts';

/**
 * Where the sample puts the threshold key: between lo and hi inclusive (lo = hi: one key; 0 where the
 * sample suggests fewer non-zero keys than k, and the count of keys above 0 then tells whether every
 * non-zero key is kept).
 */
export interface Bracket {
  hi: number;
  lo: number;
  /** Keys the sample holds strictly between lo and hi, scaled to the tensor: what the pass should collect. */
  between: number;
}

/** The exact counts the count pass returns for one bracket. */
export interface BracketCounts {
  /** Keys above hi. */
  above: number;
  /** Keys equal to hi. */
  equalHi: number;
  /** Keys equal to lo (not used where lo is hi or 0). */
  equalLo: number;
  /** Keys strictly between lo and hi, collected or not. */
  between: number;
}

/** Standard deviations of a sample rank the guess must hold on each side, plus a few ranks. */
const SPREAD_SIGMAS = 3;
const SPREAD_RANKS = 4;

/** A sample's keys (NO_KEY slots dropped) asked by rank, largest first, without sorting them all. */
export interface RankedKeys {
  readonly length: number;
  /** The key at `rank` (0: the largest) of the keys sorted descending; 0 past the last. */
  keyAt(rank: number): number;
  /** How many keys are greater than `key`. */
  above(key: number): number;
  /** How many keys equal `key`. */
  equal(key: number): number;
}

/** Keys are binned by their high 16 bits: a bf16 |τ| is its bin, so a bin is often one run of ties. */
const BIN_SHIFT = 16;
const BINS = 2 ** 16;

/**
 * Ranks a sample's keys: one histogram of their high bits, then only the bins asked for are gathered
 * and sorted. The select ranks N samples of 131,072 keys for every tensor, on the host while the GPU
 * waits; sorting each whole took ~9 ms, a tenth of a 4M-element tensor's TIES merge on SwiftShader.
 */
export function rankKeys(sample: Uint32Array): RankedKeys {
  const counts = new Uint32Array(BINS);
  let length = 0;
  for (let i = 0; i < sample.length; i++) {
    const key = sample[i] ?? NO_KEY;
    if (key === NO_KEY) continue;
    const bin = key >>> BIN_SHIFT;
    counts[bin] = (counts[bin] ?? 0) + 1;
    length++;
  }
  /** The keys in the bins above `bin`. */
  const higher = (bin: number): number => {
    let n = 0;
    for (let b = BINS - 1; b > bin; b--) n += counts[b] ?? 0;
    return n;
  };
  const gathered = new Map<number, Uint32Array>();
  /** Bin b's keys, descending. */
  const binKeys = (bin: number): Uint32Array => {
    let keys = gathered.get(bin);
    if (!keys) {
      keys = new Uint32Array(counts[bin] ?? 0);
      let n = 0;
      for (let i = 0; i < sample.length; i++) {
        const key = sample[i] ?? NO_KEY;
        if (key >>> BIN_SHIFT === bin && key !== NO_KEY) keys[n++] = key;
      }
      keys.sort().reverse();
      gathered.set(bin, keys);
    }
    return keys;
  };
  return {
    length,
    keyAt(rank) {
      if (rank < 0 || rank >= length) return 0;
      // Down from the top bin to the one that holds `rank`.
      let above = 0;
      let bin = BINS - 1;
      while (above + (counts[bin] ?? 0) <= rank) above += counts[bin--] ?? 0;
      return binKeys(bin)[rank - above] ?? 0;
    },
    above(key) {
      let n = higher(key >>> BIN_SHIFT);
      for (const k of binKeys(key >>> BIN_SHIFT)) {
        if (k <= key) break;
        n++;
      }
      return n;
    },
    equal(key) {
      let n = 0;
      for (const k of binKeys(key >>> BIN_SHIFT)) if (k === key) n++;
      return n;
    },
  };
}

/** The sample's keys strictly between lo and hi. */
function strictlyBetween(keys: RankedKeys, lo: number, hi: number): number {
  return lo < hi ? keys.above(lo) - keys.above(hi) - keys.equal(hi) : 0;
}

/**
 * The top-k when `above` keys lie above `key` and `equal` equal it and these make k: keep key >
 * threshold and the first tiesToKeep ties; a run kept whole is "keys above key − 1", no tie-break.
 */
function cut(k: number, key: number, above: number, equal: number): TopKState {
  const need = k - above;
  return need === equal ? settled(key - 1, 0) : settled(key, need);
}

/** The top-k from every key of the tensor (the sample took them all): exact, no pass needed. */
export function exactTopK(keys: RankedKeys, k: number): TopKState {
  // The k-th largest key's run: those above it and its ties make k. Fewer non-zero keys than k: keep
  // them all.
  const key = keys.keyAt(k - 1);
  if (key === 0) return settled(0, 0);
  return cut(k, key, keys.above(key), keys.equal(key));
}

/**
 * The bracket of the k-th largest of `numel` keys, from a uniform sample of them (`keys` descending):
 * the sample's keys SPREAD_SIGMAS binomial deviations of k's rank on either side.
 */
export function chooseBracket(keys: RankedKeys, k: number, numel: number): Bracket | null {
  const s = keys.length;
  if (s === 0) return null;
  const q = k / numel;
  const rank = q * s;
  const spread = Math.ceil(SPREAD_SIGMAS * Math.sqrt(s * q * (1 - q)) + SPREAD_RANKS);
  const hi = keys.keyAt(Math.max(0, Math.floor(rank) - spread));
  const lo = keys.keyAt(Math.min(s - 1, Math.ceil(rank) + spread));
  // The keys strictly between lo and hi all rank between theirs.
  return { hi, lo, between: Math.ceil((strictlyBetween(keys, lo, hi) / s) * numel) };
}

/**
 * The threshold from a bracket's exact counts and the keys collected between lo and hi (null where the
 * pass had no room for all of them or none were asked for), or null where the threshold is not in
 * the bracket or not settled by what came back.
 */
export function settleBracket(
  bracket: Bracket,
  counts: BracketCounts,
  between: Uint32Array | null,
  k: number,
): TopKState | null {
  const { hi, lo } = bracket;
  if (counts.above >= k) return null;
  // Every non-zero key is above 0, and there are fewer than k: keep them all.
  if (hi === 0) return settled(0, 0);
  if (counts.above + counts.equalHi >= k) return cut(k, hi, counts.above, counts.equalHi);
  if (needsBetween(bracket, counts, k)) {
    // k among the keys between: settled from them, and only when every one of them came back.
    if (!between || between.length !== counts.between) return null;
    const ranked = rankKeys(between);
    const aboveBetween = counts.above + counts.equalHi;
    const key = ranked.keyAt(k - aboveBetween - 1);
    return cut(k, key, aboveBetween + ranked.above(key), ranked.equal(key));
  }
  if (lo === hi) return null;
  const aboveLo = counts.above + counts.equalHi + counts.between;
  if (lo === 0) return settled(0, 0);
  if (aboveLo + counts.equalLo < k) return null;
  return cut(k, lo, aboveLo, counts.equalLo);
}

/** Whether settling this bracket with these counts needs the keys collected between lo and hi. */
export function needsBetween(bracket: Bracket, counts: BracketCounts, k: number): boolean {
  const aboveBetween = counts.above + counts.equalHi;
  return (
    bracket.lo !== bracket.hi && bracket.hi !== 0 && aboveBetween < k && aboveBetween + counts.between >= k
  );
}

/**
 * Where the first tie not kept lies, from each chunk's count of the threshold's ties (chunks in
 * tensor order): the chunk holding tie number `keep` (0-based, so `keep` ties come before it in
 * index order), and how many lie in earlier chunks. Null where it could not serve as a span: every
 * tie kept, or the first tie not kept opens its chunk (the tie marks there would keep none of it, and
 * a row that keeps none is not marked at all).
 */
export function tieChunk(ties: Uint32Array, keep: number): { chunk: number; before: number } | null {
  let before = 0;
  for (let chunk = 0; chunk < ties.length; chunk++) {
    const n = ties[chunk] ?? 0;
    if (keep < before + n) return keep > before ? { chunk, before } : null;
    before += n;
  }
  return null;
}

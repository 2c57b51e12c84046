// The host's side of the sampled TIES select (topk_sample.wgsl, topk_count.wgsl): from a sample of an
// agent's |τ| keys, the bracket [lo, hi] its top-k threshold should lie in (on bf16 weights |τ| takes
// few distinct values, and a threshold often falls inside one long run of equal keys: lo = hi); then,
// from the exact counts of one pass (keys above hi, equal to hi, equal to lo) and the keys it collected
// strictly between lo and hi, the threshold and its ties, or null where the bracket missed and the
// radix select (topk_hist) must settle it. Pure functions: the GPU plumbing is in topk-select.ts.

import { NO_KEY } from './kernels/topk_sample.ts';
import { settled, type TopKState } from '../methods/select.ts';

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

/** A sample's keys (NO_KEY slots dropped), descending. */
export function sortedKeys(sample: Uint32Array): Uint32Array {
  // The native numeric sort, then NO_KEY (the largest u32) cut off its end: a third of the time a
  // filter callback per key took, on the select's path for every tensor.
  const keys = sample.slice().sort();
  let end = keys.length;
  while (end > 0 && keys[end - 1] === NO_KEY) end--;
  return keys.subarray(0, end).reverse();
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
export function exactTopK(keys: Uint32Array, k: number): TopKState {
  let above = 0;
  let i = 0;
  while (i < keys.length) {
    const key = keys[i] ?? 0;
    // Fewer non-zero keys than k: keep them all.
    if (key === 0) break;
    let j = i;
    while (j < keys.length && keys[j] === key) j++;
    if (above + (j - i) >= k) return cut(k, key, above, j - i);
    above += j - i;
    i = j;
  }
  return settled(0, 0);
}

/**
 * The bracket of the k-th largest of `numel` keys, from a uniform sample of them (`keys` descending):
 * the sample's keys SPREAD_SIGMAS binomial deviations of k's rank on either side.
 */
export function chooseBracket(keys: Uint32Array, k: number, numel: number): Bracket | null {
  const s = keys.length;
  if (s === 0) return null;
  const q = k / numel;
  const rank = q * s;
  const spread = Math.ceil(SPREAD_SIGMAS * Math.sqrt(s * q * (1 - q)) + SPREAD_RANKS);
  const top = Math.max(0, Math.floor(rank) - spread);
  const bottom = Math.min(s - 1, Math.ceil(rank) + spread);
  const hi = keys[top] ?? 0;
  const lo = keys[bottom] ?? 0;
  let inside = 0;
  for (let i = top; i <= bottom; i++) if ((keys[i] ?? 0) < hi && (keys[i] ?? 0) > lo) inside++;
  return { hi, lo, between: Math.ceil((inside / s) * numel) };
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
  if (lo === hi) return null;
  const aboveBetween = counts.above + counts.equalHi;
  if (aboveBetween + counts.between >= k) {
    if (!between || between.length !== counts.between) return null;
    const sorted = Uint32Array.from(between).sort().reverse();
    const key = sorted[k - aboveBetween - 1] ?? 0;
    let above = aboveBetween;
    let equal = 0;
    for (const b of sorted) {
      if (b > key) above++;
      else if (b === key) equal++;
      else break;
    }
    return cut(k, key, above, equal);
  }
  const aboveLo = aboveBetween + counts.between;
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

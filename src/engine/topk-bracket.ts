// The host's side of the sampled TIES select (topk_sample.wgsl, topk_count.wgsl): from a sample of an
// agent's |τ| keys, the one key its top-k threshold should be (on bf16 weights |τ| takes few distinct
// values, and a threshold usually falls inside a long run of equal keys); then, from the exact counts
// of one pass (keys above it, keys equal to it), the threshold and its ties, or null where the guess
// missed and the radix select (topk_hist) must settle it. Pure functions: the GPU plumbing is in
// topk-select.ts.

import { NO_KEY } from './kernels/topk_sample.ts';
import { settled, type TopKState } from '../methods/select.ts';

/**
 * The guessed threshold key; 0 where the sample suggests fewer non-zero keys than k (the count of
 * keys above 0 then tells whether every non-zero key is kept).
 */
export interface Bracket {
  key: number;
}

/** The exact counts the count pass returns for one bracket. */
export interface BracketCounts {
  /** Keys above the bracket's key. */
  above: number;
  /** Keys equal to it (not used where the key is 0). */
  equal: number;
}

/** Standard deviations of a sample rank the guess must hold on each side, plus a few ranks. */
const SPREAD_SIGMAS = 3;
const SPREAD_RANKS = 4;

/** A sample's keys (NO_KEY slots dropped), descending. */
export function sortedKeys(sample: Uint32Array): Uint32Array {
  const keys = sample.filter((k) => k !== NO_KEY);
  return keys.sort().reverse();
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
 * The key the k-th largest of `numel` keys should be, from a uniform sample of them (`keys`
 * descending): the one key the sample holds at every rank within SPREAD_SIGMAS binomial deviations of
 * k's, or null where the window holds several (the radix select settles those).
 */
export function chooseBracket(keys: Uint32Array, k: number, numel: number): Bracket | null {
  const s = keys.length;
  if (s === 0) return null;
  const q = k / numel;
  const rank = q * s;
  const spread = Math.ceil(SPREAD_SIGMAS * Math.sqrt(s * q * (1 - q)) + SPREAD_RANKS);
  const top = keys[Math.max(0, Math.floor(rank) - spread)] ?? 0;
  const bottom = keys[Math.min(s - 1, Math.ceil(rank) + spread)] ?? 0;
  return top === bottom ? { key: top } : null;
}

/** The threshold from a bracket's exact counts, or null where it is not the bracket's key. */
export function settleBracket(bracket: Bracket, counts: BracketCounts, k: number): TopKState | null {
  if (counts.above >= k) return null;
  // Every non-zero key is above 0, and there are fewer than k: keep them all.
  if (bracket.key === 0) return settled(0, 0);
  if (counts.above + counts.equal < k) return null;
  return cut(k, bracket.key, counts.above, counts.equal);
}

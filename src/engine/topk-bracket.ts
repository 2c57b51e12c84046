// The host's side of the sampled TIES select (topk_sample.wgsl, topk_count.wgsl): from a sample of an
// agent's |τ| keys, a bracket that should hold its top-k threshold and the few distinct keys the
// sample saw inside it; then, from the exact counts of one pass, the threshold and its ties, or null
// where the bracket missed and the radix select (topk_hist) must settle it. Pure functions: the
// GPU plumbing is in topk-select.ts.

import { BRACKET_VALUES } from './kernels/topk_count.ts';
import { NO_KEY } from './kernels/topk_sample.ts';
import type { TopKState } from '../methods/select.ts';

export interface Bracket {
  /** Keys above `hi` are counted; keys in [lo, hi] are matched against `values`. */
  hi: number;
  lo: number;
  /** The distinct keys the sample saw in [lo, hi], descending (at most BRACKET_VALUES). */
  values: number[];
}

/**
 * Whether the count pass must sort the keys inside the bracket among its values: not where the
 * bracket is the one value hi, or holds no value at all (only the keys above hi count then).
 */
export function isGeneral(b: Bracket): boolean {
  return b.values.length > 1 || (b.values.length === 1 && b.lo !== b.hi);
}

/** The exact counts the count pass returns for one bracket. */
export interface BracketCounts {
  above: number;
  /** Keys inside [lo, hi] equal to none of the values. */
  other: number;
  /** Per value, the keys equal to it. */
  equal: readonly number[];
}

/** Standard deviations of a sample rank the bracket spans on each side, plus a few ranks. */
const SPREAD_SIGMAS = 3;
const SPREAD_RANKS = 4;

/** A sample's keys (NO_KEY slots dropped), descending. */
export function sortedKeys(sample: Uint32Array): Uint32Array {
  const keys = sample.filter((k) => k !== NO_KEY);
  return keys.sort().reverse();
}

function settled(threshold: number, tiesToKeep: number): TopKState {
  return { searching: false, need: 0, prefix: 0, threshold, tiesToKeep };
}

/**
 * The top-k of keys walked from the top, `above` keys being above the first of `runs` (descending
 * distinct keys and how many hold each): keep key > threshold and the first tiesToKeep ties. Null
 * when the runs end before k keys; a run kept whole is "keys above its key − 1", no tie-break.
 */
function walk(k: number, above: number, runs: readonly (readonly [number, number])[]): TopKState | null {
  let acc = above;
  for (const [key, n] of runs) {
    if (acc + n >= k) {
      const need = k - acc;
      return need === n ? settled(key - 1, 0) : settled(key, need);
    }
    acc += n;
  }
  return null;
}

/**
 * The top-k from every key of the tensor (the sample took them all): exact, no pass needed.
 * `keys` descending, zeros included.
 */
export function exactTopK(keys: Uint32Array, k: number): TopKState {
  const runs: [number, number][] = [];
  for (const key of keys) {
    if (key === 0) break;
    const last = runs[runs.length - 1];
    if (last && last[0] === key) last[1]++;
    else runs.push([key, 1]);
  }
  // Fewer non-zero keys than k: keep them all.
  return walk(k, 0, runs) ?? settled(0, 0);
}

/**
 * Where the k-th largest of `numel` keys should lie, from a uniform sample of them (`keys`
 * descending): the sample's keys within SPREAD_SIGMAS binomial deviations of k's rank. Where more
 * than BRACKET_VALUES distinct keys lie there, the bracket is narrowed to the BRACKET_VALUES
 * consecutive ones that best centre k's rank: a narrower bracket misses more often, and a miss costs
 * the radix passes it would have taken anyway.
 */
export function chooseBracket(keys: Uint32Array, k: number, numel: number): Bracket {
  const s = keys.length;
  const q = k / numel;
  const rank = q * s;
  const spread = Math.ceil(SPREAD_SIGMAS * Math.sqrt(s * q * (1 - q)) + SPREAD_RANKS);
  const top = Math.max(0, Math.floor(rank) - spread);
  const bottom = Math.min(s - 1, Math.ceil(rank) + spread);
  // Distinct non-zero keys of the window, each with its first and last sample rank.
  const runs: { key: number; first: number; last: number }[] = [];
  for (let i = top; i <= bottom; i++) {
    const key = keys[i] ?? 0;
    // Zero keys are never kept, so the bracket stops above them.
    if (key === 0) break;
    const run = runs[runs.length - 1];
    if (run?.key === key) run.last = i;
    else runs.push({ key, first: i, last: i });
  }
  if (runs.length === 0) return { hi: keys[top] ?? 0, lo: 1, values: [] };
  let from = 0;
  let to = runs.length - 1;
  if (runs.length > BRACKET_VALUES) {
    let best = -Infinity;
    for (let a = 0; a + BRACKET_VALUES <= runs.length; a++) {
      const b = a + BRACKET_VALUES - 1;
      const margin = Math.min(rank - (runs[a]?.first ?? 0), (runs[b]?.last ?? 0) - rank);
      if (margin > best) [best, from, to] = [margin, a, b];
    }
  }
  const chosen = runs.slice(from, to + 1);
  const last = chosen[chosen.length - 1];
  // The window reached the sample's zeros or its end: every smaller non-zero key is inside.
  const open = to === runs.length - 1 && ((keys[bottom] ?? 0) === 0 || bottom === s - 1);
  return {
    hi: chosen[0]?.key ?? 0,
    lo: open ? 1 : (last?.key ?? 1),
    values: chosen.map((r) => r.key),
  };
}

/** The threshold from a bracket's exact counts, or null where it is not inside the bracket. */
export function settleBracket(bracket: Bracket, counts: BracketCounts, k: number): TopKState | null {
  if (counts.above >= k) return null;
  // Keys inside the bracket that the sample never saw: their place among the values is unknown.
  if (counts.other !== 0) return null;
  const runs = bracket.values.map((v, i) => [v, counts.equal[i] ?? 0] as const);
  const state = walk(k, counts.above, runs);
  if (state) return state;
  // Every non-zero key is at most hi, and there are fewer than k: keep them all.
  return bracket.lo === 1 ? settled(0, 0) : null;
}

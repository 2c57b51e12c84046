// The exact TIES top-k as a radix select over the f32 bits of |τ|, shared by the GPU engine (which
// counts the digit histograms in topk_hist.wgsl) and the CPU engine. Keeping exactly k entries needs a
// tie-break at the threshold: ties are kept lowest element index first.

/**
 * Digits of the 31-bit magnitude key, most significant first. Two wide digits: each digit is one more
 * pass over the tensor, and a 2^16-bin row per agent is still a small buffer to clear and read back.
 * The first takes the exponent and 8 mantissa bits, which is every bit of a |τ| between two nearby
 * bf16 values: there the first digit's bin usually holds one key and settles the select alone
 * (settleSingleKey).
 */
export const RADIX_DIGITS: readonly { shift: number; bits: number }[] = [
  { shift: 15, bits: 16 },
  { shift: 0, bits: 15 },
];

/** Histogram row length per agent (the widest digit). */
export const RADIX_BINS = 65536;

/** Threshold that no magnitude key exceeds or equals (keys are < 2^31): keep nothing. */
export const KEEP_NONE = 0xffffffff;

export interface TopKState {
  /** Still narrowing the threshold: count the next digit. */
  searching: boolean;
  /** Entries still to choose among the keys whose high digits equal `prefix`. */
  need: number;
  prefix: number;
  /** Once settled: keep key > threshold, plus the first `tiesToKeep` keys equal to it. */
  threshold: number;
  tiesToKeep: number;
}

/** k = floor(density·numel) entries per agent (mergekit `magnitude`), all of them from density 1 up. */
export function topKCount(density: number, numel: number): number {
  if (!Number.isFinite(density)) throw new RangeError(`TIES density must be a finite number, got ${density}`);
  if (density >= 1) return numel;
  return Math.max(0, Math.floor(density * numel));
}

/** A select that is done: keep key > threshold and the first tiesToKeep keys equal to it. */
export function settled(threshold: number, tiesToKeep: number): TopKState {
  return { searching: false, need: 0, prefix: 0, threshold, tiesToKeep };
}

/** The state before any histogram: settled at once when nothing or everything is kept. */
export function startTopK(k: number, numel: number): TopKState {
  if (k <= 0) return settled(KEEP_NONE, 0);
  // Keeping a zero changes nothing, so "every entry" is "every non-zero key": threshold 0.
  if (k >= numel) return settled(0, 0);
  return { searching: true, need: k, prefix: 0, threshold: 0, tiesToKeep: 0 };
}

/**
 * Advances one digit given `histogram[d]` = non-zero keys whose higher digits equal the prefix and whose
 * digit `digit` is d.
 */
export function stepTopK(state: TopKState, histogram: ArrayLike<number>, digit: number): TopKState {
  if (!state.searching) return state;
  const { shift, bits } = RADIX_DIGITS[digit]!;
  let above = 0;
  for (let d = (1 << bits) - 1; d >= 0; d--) {
    const here = histogram[d] ?? 0;
    if (above + here < state.need) {
      above += here;
      continue;
    }
    const prefix = (state.prefix | (d << shift)) >>> 0;
    const need = state.need - above;
    // Every key with this prefix is kept: keys ≥ prefix, i.e. > prefix − 1, and no tie-break.
    if (need === here) return settled(prefix === 0 ? 0 : prefix - 1, 0);
    if (shift === 0) return settled(prefix, need);
    return { searching: true, need, prefix, threshold: 0, tiesToKeep: 0 };
  }
  // Fewer non-zero keys than k: keep them all.
  return settled(0, 0);
}

/**
 * Settles a state still searching after the first digit when every key of its chosen bin is the same:
 * `least` and `greatest` are the least and greatest low bits (below the first digit) of that bin's
 * keys. The threshold is then that key, and the `need` entries still to choose are its first ties.
 */
export function settleSingleKey(state: TopKState, least: number, greatest: number): TopKState {
  if (!state.searching || least !== greatest) return state;
  return settled((state.prefix | least) >>> 0, state.need);
}

/** Whether an entry with this key is kept, `tieRank` being the number of equal keys at lower indices. */
export function topKKept(state: TopKState, key: number, tieRank: number): boolean {
  return key > state.threshold || (key === state.threshold && tieRank < state.tiesToKeep);
}

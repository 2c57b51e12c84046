// How TopKSelect reads a first-digit bin of topk_hist.wgsl: the kernel bounds only the bin's "odd"
// keys (lower bits not all zero) and counts them; the bin holds one key when its least and greatest
// lower bits read back equal. Words written by hand as the kernel lays them out (SLOTS = 4).
import { describe, expect, it } from 'vitest';
import { RADIX_BINS } from '../../../methods/select.ts';
import { histogramBin, TOPK_HIST_SLOTS } from './topk_hist.ts';

const SHIFT = 15;

/** Agent 1's bin 7 as the kernel leaves it, given its keys' lower bits. */
function words(lows: readonly number[]): Uint32Array {
  const w = new Uint32Array(2 * RADIX_BINS * TOPK_HIST_SLOTS);
  const at = (RADIX_BINS + 7) * TOPK_HIST_SLOTS;
  for (const low of lows) {
    w[at] = (w[at] ?? 0) + 1;
    if (low === 0) continue;
    w[at + 1] = (w[at + 1] ?? 0) + 1;
    w[at + 2] = Math.max(w[at + 2] ?? 0, 2 ** SHIFT - low);
    w[at + 3] = Math.max(w[at + 3] ?? 0, low + 1);
  }
  return w;
}

describe('histogramBin', () => {
  it('reads a bin of keys without lower bits as one key, low bits 0', () => {
    expect(histogramBin(words([0, 0, 0]), 1, 7, SHIFT)).toEqual({ count: 3, least: 0, greatest: 0 });
  });

  it('reads a bin of one odd key as that key', () => {
    expect(histogramBin(words([5, 5]), 1, 7, SHIFT)).toEqual({ count: 2, least: 5, greatest: 5 });
  });

  it('reads a bin of several keys as several, odd or mixed with zeros', () => {
    expect(histogramBin(words([3, 9, 3]), 1, 7, SHIFT)).toEqual({ count: 3, least: 3, greatest: 9 });
    const mixed = histogramBin(words([0, 6, 6]), 1, 7, SHIFT);
    expect(mixed.count).toBe(3);
    expect(mixed.least).not.toBe(mixed.greatest);
  });
});

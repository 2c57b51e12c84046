import { describe, expect, it } from 'vitest';
import { formatBytes } from '../../format/inspect.ts';
import type { WindowCacheReport } from '../contract.ts';
import {
  cacheSlots,
  MIN_READ_ONCE_WINDOW,
  readOnce,
  readOnceWindow,
  readOnceWindowFor,
  WindowCache,
} from './window-cache.ts';
import { describeWindowCache } from '../../driver/job.ts';

const MIB = 2 ** 20;

function report(over: Partial<WindowCacheReport>): WindowCacheReport {
  return { kept: 0, reused: 0, reusedBytes: 0, rereadBytes: 0, wanted: 0, bytes: 0, shortBytes: 0, ...over };
}

describe('cacheSlots', () => {
  it('counts the windows that fit beside the buffer sets and the driver, rounding down', () => {
    expect(cacheSlots(512 * MIB, 360 * MIB, 80 * MIB, 64 * MIB)).toBe(1);
    expect(cacheSlots(1024 * MIB, 360 * MIB, 80 * MIB, 64 * MIB)).toBe(9);
    expect(cacheSlots(504 * MIB, 360 * MIB, 80 * MIB, 64 * MIB)).toBe(1);
    expect(cacheSlots(503 * MIB, 360 * MIB, 80 * MIB, 64 * MIB)).toBe(0);
  });

  it('gives none where the sets already take more than the budget, or a window is empty', () => {
    expect(cacheSlots(512 * MIB, 600 * MIB, 0, 64 * MIB)).toBe(0);
    expect(cacheSlots(512 * MIB, 0, 0, 0)).toBe(0);
  });
});

describe('WindowCache.shortBytes', () => {
  it('counts what each tensor lacked in its own windows, the most of any', () => {
    // No buffer is made: nothing is taken.
    const cache = new WindowCache({} as GPUDevice);
    cache.fit(64 * MIB, 1);
    cache.want(5);
    expect(cache.shortBytes).toBe(4 * 64 * MIB);
    // The engine cut later tensors into windows of a quarter: 12 wanted of 10 is less.
    cache.fit(16 * MIB, 10);
    cache.want(12);
    expect(cache.shortBytes).toBe(4 * 64 * MIB);
    cache.want(30);
    expect(cache.shortBytes).toBe(20 * 16 * MIB);
  });
});

describe('readOnceWindow', () => {
  // The CLI's default: 512 MiB, of which the driver holds 64 MiB of read-ahead and 16 of write-behind;
  // bf16 TIES (one tie row per agent) over base + 3 agents.
  const cli = {
    budget: 512 * MIB,
    driver: { readAhead: 64 * MIB, writeBehind: 16 * MIB },
    agents: 3,
    inBytes: 2,
    outBytes: 2,
    tieRows: 1,
  };
  const MLP = 11_008 * 4_096;

  it('keeps the largest window where the tensor is read once in it', () => {
    // Two windows: the sets hold both.
    expect(readOnceWindow(4_096 * 4_096, 2 ** 23, cli)).toBe(2 ** 23);
  });

  it('cuts a 7B MLP projection into the fewest windows the budget keeps, as small as that many allow', () => {
    // In 6 windows of 2^23 the sets take 2 × 179 MiB and leave room for 1 (64 MiB each).
    expect(readOnce(MLP, 2 ** 23, cli)).toBe(false);
    // 15 windows of 3,014,656 elements (184 tie chunks): the sets take 134,905,856 bytes, and
    // (512 MiB − 80 MiB − that) ÷ 24,117,248 bytes per window = 13.19, so 13 kept + 2 = 15.
    expect(readOnceWindow(MLP, 2 ** 23, cli)).toBe(3_014_656);
    expect(readOnce(MLP, 3_014_656, cli)).toBe(true);
    // 14 windows of 3,227,648 would need 12 kept, and 11.95 fit.
    expect(readOnce(MLP, 3_227_648, cli)).toBe(false);
  });

  it('names for a model the window its largest tensor that can be read once needs, and what it leaves', () => {
    const sizes = [32_000 * 4_096, MLP, MLP, MLP, 4_096 * 4_096, 4_096];
    // The embedding is read in part twice in any window; the rest once in the MLP projections' window.
    expect(readOnceWindowFor(sizes, 2 ** 23, cli)).toEqual({ window: 3_014_656, twice: 1 });
    // Where every tensor is read once in the largest windows already, none is named.
    expect(readOnceWindowFor([MLP, 4_096], 2 ** 23, { ...cli, budget: 2 ** 31 })).toBeNull();
  });

  it('gives none where no window of MIN_READ_ONCE_WINDOW or more is read once, or below a smaller max', () => {
    // A 7B embedding (32000 × 4096): its inputs alone are 1000 MiB.
    expect(readOnceWindow(32_000 * 4_096, 2 ** 23, cli)).toBeNull();
    // An engine whose windows are below the floor already is not cut smaller, though smaller ones
    // would be read once (2^17: 342 kept of 1 MiB beside 5.6 MiB of sets; 2^19: 84 of 4 MiB beside 22.4).
    const tight = { ...cli, budget: 432 * MIB };
    expect(readOnce(MLP, MIN_READ_ONCE_WINDOW / 8, tight)).toBe(true);
    expect(readOnce(MLP, MIN_READ_ONCE_WINDOW / 2, tight)).toBe(false);
    expect(readOnceWindow(MLP, MIN_READ_ONCE_WINDOW / 2, tight)).toBeNull();
  });
});

describe('describeWindowCache', () => {
  const hint = (b: number): string => `--memory-budget ${b}`;

  it('says nothing where no pass wanted a window kept', () => {
    expect(describeWindowCache(report({}), 512 * MIB, formatBytes, hint)).toBeNull();
  });

  it('says every input was read once where nothing was read again', () => {
    expect(
      describeWindowCache(
        report({ wanted: 2, kept: 2, reused: 2, reusedBytes: 128 * MIB }),
        512 * MIB,
        formatBytes,
        hint,
      ),
    ).toBe('Windows kept on the GPU between passes spared reading 128.00 MiB: every input was read once.');
  });

  it('names the bytes read again and the budget that would have kept them', () => {
    const text = describeWindowCache(
      report({
        wanted: 3,
        kept: 1,
        reused: 1,
        reusedBytes: 64 * MIB,
        rereadBytes: 100 * MIB,
        shortBytes: 128 * MIB,
      }),
      512 * MIB,
      formatBytes,
      hint,
    );
    expect(text).toBe(
      'Windows kept on the GPU between passes spared reading 64.00 MiB; 100.00 MiB were read again for want ' +
        `of room (--memory-budget ${640 * MIB} would keep them).`,
    );
  });
});

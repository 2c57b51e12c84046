import { describe, expect, it } from 'vitest';
import { formatBytes } from '../format/inspect.ts';
import type { WindowCacheReport } from '../methods/merge-types.ts';
import { cacheSlots, describeWindowCache } from './window-cache.ts';

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

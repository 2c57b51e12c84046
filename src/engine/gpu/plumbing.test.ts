import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { METHOD_LIST, methodOf } from '../../methods/registry/index.ts';
import type { MethodName } from '../../methods/types.ts';
import {
  countGroups,
  DEFAULT_MEMORY_BUDGET,
  statsGroups,
  MAX_WINDOW_ELEMENTS,
  mergeGroups,
  mergeSizes,
  pad4,
  splitDispatch,
  tensorWindows,
  tieRowsPerAgent,
  windowCapacity,
  driverMemory,
  windowElements,
  windowMemory,
  wordsFor,
  type WindowLimits,
} from './plumbing.ts';

describe('pad4 and wordsFor', () => {
  it('round byte counts up to whole words', () => {
    expect([0, 1, 2, 3, 4, 5, 8].map(pad4)).toEqual([0, 4, 4, 4, 4, 8, 8]);
    expect(wordsFor(1, 2)).toBe(1);
    expect(wordsFor(3, 2)).toBe(2);
    expect(wordsFor(3, 4)).toBe(3);
    expect(wordsFor(0, 2)).toBe(0);
  });
});

describe('splitDispatch', () => {
  it('keeps small dispatches one-dimensional', () => {
    expect(splitDispatch(0, 65535)).toEqual({ x: 0, y: 1, groups: 0 });
    expect(splitDispatch(65535, 65535)).toEqual({ x: 65535, y: 1, groups: 65535 });
  });

  it('splits under the per-dimension limit and covers every workgroup with less than a row to spare', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.integer({ min: 1, max: 70_000 }),
        (groups, max) => {
          fc.pre(groups <= max * max);
          const d = splitDispatch(groups, max);
          expect(d.groups).toBe(groups);
          expect(d.x).toBeLessThanOrEqual(max);
          expect(d.y).toBeLessThanOrEqual(max);
          expect(d.x * d.y).toBeGreaterThanOrEqual(groups);
          expect(d.x * d.y - groups).toBeLessThan(d.x);
        },
      ),
    );
  });

  it('refuses what no 2D grid holds', () => {
    expect(() => splitDispatch(10 * 10 + 1, 10)).toThrow(RangeError);
    expect(() => splitDispatch(-1, 10)).toThrow(RangeError);
  });
});

describe('workgroup counts', () => {
  it('has one invocation per element pair, 2048 elements per histogram and 32768 per statistics workgroup', () => {
    expect(mergeGroups(512)).toBe(1);
    expect(mergeGroups(513)).toBe(2);
    expect(mergeGroups(1)).toBe(1);
    expect(mergeGroups(0)).toBe(0);
    expect(countGroups(2048)).toBe(1);
    expect(countGroups(2049)).toBe(2);
    expect(statsGroups(32768)).toBe(1);
    expect(statsGroups(32769)).toBe(2);
    expect(statsGroups(1)).toBe(1);
  });
});

describe('windowElements', () => {
  const limits: WindowLimits = {
    agents: 3,
    inBytes: 2,
    outBytes: 2,
    tieRows: 2,
    maxStorageBufferBindingSize: 128 * 2 ** 20,
    maxBufferSize: 256 * 2 ** 20,
    maxComputeWorkgroupsPerDimension: 65535,
    maxWindowElements: 2 ** 40,
  };

  it('fits N+1 input slots in one binding', () => {
    const w = windowElements(limits);
    expect(w).toBe((128 * 2 ** 20) / 4 / 2);
    expect(4 * pad4(w * 2)).toBeLessThanOrEqual(128 * 2 ** 20);
    expect(windowElements({ ...limits, agents: 7 })).toBe((128 * 2 ** 20) / 8 / 2);
  });

  it('honours the smaller of binding and buffer size, the engine cap and the output binding', () => {
    expect(windowElements({ ...limits, maxBufferSize: 64 * 2 ** 20 })).toBe((64 * 2 ** 20) / 4 / 2);
    expect(windowElements({ ...limits, maxWindowElements: 1000 })).toBe(1000);
    expect(windowElements({ ...limits, agents: 1, inBytes: 2, outBytes: 4 })).toBe((128 * 2 ** 20) / 4);
    expect(
      windowElements({ ...limits, maxStorageBufferBindingSize: 2 ** 40, maxBufferSize: 2 ** 40 }),
    ).toBeLessThanOrEqual(MAX_WINDOW_ELEMENTS);
  });

  it('keeps the merge dispatch inside the 2D grid', () => {
    const w = windowElements({ ...limits, outBytes: 4, maxComputeWorkgroupsPerDimension: 4 });
    expect(w).toBe(16 * 512);
    expect(() => splitDispatch(mergeGroups(w), 4)).not.toThrow();
    expect(() => splitDispatch(mergeGroups(w + 1), 4)).toThrow(RangeError);
  });

  it('refuses limits with no room', () => {
    expect(() => windowElements({ ...limits, maxStorageBufferBindingSize: 4 })).toThrow(RangeError);
  });
});

describe('windows sized by a memory budget', () => {
  // A device with large bindings (a 4 GiB card), so only the budget limits the window.
  const wide: WindowLimits = {
    agents: 16,
    inBytes: 4,
    outBytes: 4,
    tieRows: 2,
    maxStorageBufferBindingSize: 4 * 2 ** 30,
    maxBufferSize: 4 * 2 ** 30,
    maxComputeWorkgroupsPerDimension: 65535,
    maxWindowElements: 2 ** 23,
  };

  /** What the two buffer sets hold, counted buffer by buffer as the engine allocates them. */
  function heldBytes(elements: number, l: WindowLimits): number {
    // Input slots on 16-byte boundaries: kernels read them as vec4 words.
    const slot = Math.ceil((elements * l.inBytes) / 16) * 16;
    const output = Math.ceil((elements * l.outBytes) / 4) * 4;
    // Per merge workgroup (512 elements): 16 tie blocks of 32 elements, each a prefix and a word of bits.
    const tieBlocks = Math.ceil(elements / 512) * 16;
    const perSet =
      (l.agents + 1) * slot + // GPU inputs
      (l.agents + 1) * slot + // staging copy
      output + // GPU output
      output + // readback buffer
      output + // copy handed to the writer
      l.tieRows * l.agents * tieBlocks * 4; // the method's tie rows per agent, one word per block
    return 2 * perSet;
  }

  /**
   * heldBytes and what the driver holds beside them (read-ahead: an eighth of the budget, at most
   * 64 MiB and one window of 16-bit elements per model; write-behind: one model's share of that).
   */
  function budgeted(elements: number, l: WindowLimits): number {
    const budget = l.memoryBudget ?? 0;
    const ahead = Math.min(64 * 2 ** 20, Math.floor(budget / 8), (l.agents + 1) * l.maxWindowElements * 2);
    return heldBytes(elements, l) + ahead + Math.floor(ahead / (l.agents + 1));
  }

  it('leaves the driver an eighth of the budget to read ahead (at most 64 MiB, a 16-bit window per model) and a window to write behind', () => {
    // The default budget, 3 agents, the default window: 4 windows of 16 MiB ahead, one behind.
    expect(driverMemory(DEFAULT_MEMORY_BUDGET, 3, 2 ** 23)).toEqual({
      readAhead: 2 ** 26,
      writeBehind: 2 ** 24,
    });
    expect(driverMemory(DEFAULT_MEMORY_BUDGET, 3, 2 ** 20)).toEqual({
      readAhead: 2 ** 23,
      writeBehind: 2 ** 21,
    });
    expect(driverMemory(2 ** 20, 3, 2 ** 23)).toEqual({ readAhead: 2 ** 17, writeBehind: 2 ** 15 });
    expect(driverMemory(8 * 2 ** 30, 31, 2 ** 23)).toEqual({ readAhead: 2 ** 26, writeBehind: 2 ** 21 });
  });

  it('keeps 16 f32 agents inside the default budget, where the element cap alone took over 2 GiB', () => {
    expect(heldBytes(windowElements(wide), wide)).toBeGreaterThan(2 * 2 ** 30);
    const limits = { ...wide, memoryBudget: DEFAULT_MEMORY_BUDGET };
    const w = windowElements(limits);
    expect(budgeted(w, limits)).toBeLessThanOrEqual(DEFAULT_MEMORY_BUDGET);
    // The largest such window: one more element would not fit.
    expect(budgeted(w + 1, limits)).toBeGreaterThan(DEFAULT_MEMORY_BUDGET);
  });

  it('costs bf16 merges of 3 agents nothing: the element cap is reached first', () => {
    const limits = { ...wide, agents: 3, inBytes: 2, outBytes: 2, memoryBudget: DEFAULT_MEMORY_BUDGET };
    expect(windowElements(limits)).toBe(2 ** 23);
    expect(budgeted(2 ** 23, limits)).toBeLessThanOrEqual(DEFAULT_MEMORY_BUDGET);
  });

  // Tie rows per agent, by what each method's merge ranks: TIES one threshold, Model Breadcrumbs two
  // (its top-k and its outlier cut), the rest none (DARE drops at random, RAM and the sums rank nothing).
  const TIE_ROWS: Record<MethodName, number> = {
    ram: 0,
    ramplus: 0,
    ramplus_soft: 0,
    ramplus_tl: 0,
    linear: 0,
    task_arithmetic: 0,
    ties: 1,
    dare_linear: 0,
    dare_ties: 0,
    breadcrumbs: 2,
    breadcrumbs_ties: 2,
    della: 0,
    della_linear: 0,
    slerp: 0,
  };

  it('sizes the tie counts per method from its plan', () => {
    expect(METHOD_LIST.map((d) => [d.name, tieRowsPerAgent(d.plan)])).toEqual(
      METHOD_LIST.map((d) => [d.name, TIE_ROWS[d.name]]),
    );
  });

  it('counts every buffer the engine allocates for each method (windowMemory of windowCapacity)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5_000_000 }),
        fc.integer({ min: 1, max: 32 }),
        fc.constantFrom(2, 4),
        fc.constantFrom(2, 4),
        fc.constantFrom(...METHOD_LIST.map((d) => d.name)),
        (elements, agents, inBytes, outBytes, method) => {
          const rows = tieRowsPerAgent(methodOf(method).plan);
          const l = { ...wide, agents, inBytes, outBytes, tieRows: TIE_ROWS[method] };
          expect(windowMemory(windowCapacity(elements, agents, inBytes, outBytes, rows))).toBe(
            heldBytes(elements, l),
          );
        },
      ),
    );
  });

  it('buys methods that rank fewer ties larger windows within one budget', () => {
    const limits = (tieRows: number): WindowLimits => ({
      ...wide,
      tieRows,
      memoryBudget: DEFAULT_MEMORY_BUDGET,
    });
    const window = (tieRows: number): number => windowElements(limits(tieRows));
    expect(window(0)).toBeGreaterThan(window(1));
    expect(window(1)).toBeGreaterThan(window(2));
    for (const tieRows of [0, 1, 2]) {
      const w = window(tieRows);
      expect(budgeted(w, limits(tieRows))).toBeLessThanOrEqual(DEFAULT_MEMORY_BUDGET);
      expect(budgeted(w + 1, limits(tieRows))).toBeGreaterThan(DEFAULT_MEMORY_BUDGET);
    }
  });

  it('gives the largest window within any budget, down to a few elements', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 32 }),
        fc.constantFrom(2, 4),
        fc.constantFrom(2, 4),
        fc.integer({ min: 2 ** 10, max: 2 ** 32 }),
        fc.integer({ min: 0, max: 2 }),
        (agents, inBytes, outBytes, memoryBudget, tieRows) => {
          const l = { ...wide, agents, inBytes, outBytes, memoryBudget, tieRows };
          if (budgeted(1, l) > memoryBudget) {
            expect(() => windowElements(l)).toThrow(/memory budget/);
            return;
          }
          const w = windowElements(l);
          expect(budgeted(w, l)).toBeLessThanOrEqual(memoryBudget);
          if (w < 2 ** 23) expect(budgeted(w + 1, l)).toBeGreaterThan(memoryBudget);
        },
      ),
    );
  });

  it('refuses a budget too small for one element, saying so', () => {
    expect(() => windowElements({ ...wide, memoryBudget: 64 })).toThrow(/memory budget of 64 bytes/);
  });
});

describe('mergeSizes', () => {
  it('counts each tensor, the largest and the widest dtype, with the shapes the reader allows', () => {
    const sizes = mergeSizes([
      { shape: [11008, 4096], dtype: 'BF16' },
      { shape: [], dtype: 'F16' },
      { shape: [4096], dtype: 'F32' },
      { shape: [3, 0, 5], dtype: 'BF16' },
    ]);
    expect(sizes).toEqual({ numels: [45_088_768, 1, 4096, 0], largest: 45_088_768, widestBytes: 4 });
  });

  it('gives 16-bit slots and no largest for no tensors or only 16-bit ones', () => {
    expect(mergeSizes([])).toEqual({ numels: [], largest: 0, widestBytes: 2 });
    expect(mergeSizes([{ shape: [7, 9], dtype: 'F16' }]).widestBytes).toBe(2);
  });
});

describe('tensorWindows', () => {
  it('covers the tensor in order with no gap, odd sizes included', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 1, max: 700 }), (numel, size) => {
        const windows = tensorWindows(numel, size);
        let next = 0;
        windows.forEach((w, i) => {
          expect(w.index).toBe(i);
          expect(w.start).toBe(next);
          expect(w.count).toBeGreaterThan(0);
          expect(w.count).toBeLessThanOrEqual(size);
          next += w.count;
        });
        expect(next).toBe(numel);
        expect(windows.length).toBe(Math.ceil(numel / size));
      }),
    );
  });
});

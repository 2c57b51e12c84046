// Windows a counting pass uploaded, kept on the GPU for the passes that follow it. TIES, Breadcrumbs,
// tensor-local RAM+ and DARE's l1 rescaling visit a tensor's windows in a pass before the merge; the two
// buffer sets still hold two of them when it starts, and every other window the merge would read from
// the files again. Where the memory budget has room beside the buffer sets and the driver, a pass
// before the merge keeps each window of its tensor that a set is about to let go: the set's inputs
// buffer moves into a slot here and the set takes a spare one instead; the next pass that needs the
// window trades the set's buffer for it again. Nothing is copied (a first version copied each window
// out and back on the GPU, and in Chromium on SwiftShader those copies cost more than the reads they
// spared). A tensor of up to 2 + slots windows is read once whatever the method (every window, where a
// second counting pass follows the first). Where a tensor has more, smaller windows may hold it
// (readOnceWindow): each set's staging and outputs shrink with the window, so the same budget keeps more
// of the tensor. The engine does not cut them smaller by itself: on SwiftShader the extra windows cost
// more time than the reads they spared (docs/speed-log.md, ninth round); the command line names the size.

import type { WindowCacheReport } from '../contract.ts';
import { inputUsage } from './buffer-sets.ts';
import { windowCapacity, windowMemory, type DriverMemory, type WindowCapacity } from './plumbing.ts';

/** A buffer of a set's input size: which window of which job (the engine's tag for it) it holds, if any. */
interface Slot {
  buffer: GPUBuffer;
  tag: string | null;
  /** The job the window belongs to: a slot of an earlier job may be taken (jobs run one at a time). */
  job: number;
}

/** What the cache has counted (the report less what it holds now). */
export type WindowCacheCounts = Omit<WindowCacheReport, 'bytes' | 'shortBytes'>;

/**
 * How many windows of `inputBytes` the budget leaves room for beside the buffer sets (`setsBytes`,
 * windowMemory) and the driver's read-ahead and write-behind: none where that is all the budget.
 */
export function cacheSlots(
  budget: number,
  setsBytes: number,
  driverBytes: number,
  inputBytes: number,
): number {
  if (inputBytes <= 0) return 0;
  return Math.max(0, Math.floor((budget - setsBytes - driverBytes) / inputBytes));
}

/**
 * The windows of a set's input size (`room`) that `budget` keeps beside both buffer sets and the
 * driver's read-ahead and write-behind: what the engine sizes its cache by and the engine card shows.
 */
export function keptSlots(budget: number, room: WindowCapacity, driver: DriverMemory): number {
  return cacheSlots(budget, windowMemory(room), driver.readAhead + driver.writeBehind, room.inputBytes);
}

/**
 * The smallest window readOnceWindow names to read a tensor once: below it the dispatches and round
 * trips per byte would cost more than the reads they spare (on SwiftShader even 3M-element windows cost
 * TIES more time than they spare, docs/speed-log.md, ninth round).
 */
export const MIN_READ_ONCE_WINDOW = 2 ** 20;

/** What sizes a job's windows and the cache's room besides the tensor: the engine's and the job's. */
export interface ReadOnceLimits {
  budget: number;
  driver: DriverMemory;
  agents: number;
  inBytes: number;
  outBytes: number;
  /** Tie-count rows per agent of the method (tieRowsPerAgent). */
  tieRows: number;
}

/**
 * Whether a tensor of `numel` elements cut into windows of `n` is read once by the passes before its
 * merge: its windows past the two the buffer sets hold all fit the cache.
 */
export function readOnce(numel: number, n: number, limits: ReadOnceLimits): boolean {
  const { budget, driver, agents, inBytes, outBytes, tieRows } = limits;
  const room = windowCapacity(n, agents, inBytes, outBytes, tieRows);
  return Math.ceil(numel / n) <= 2 + keptSlots(budget, room, driver);
}

/**
 * The window a tensor is read once in by the passes before its merge: `max` where it is already;
 * else one of at least MIN_READ_ONCE_WINDOW elements (smaller windows leave the cache more of the
 * budget, since each set's staging and outputs shrink with them): for the fewest windows that do, the
 * smallest size that many allow, which is the one with the most room and cuts the tensor evenly. Null
 * where the budget holds the tensor in no window of that size.
 */
export function readOnceWindow(numel: number, max: number, limits: ReadOnceLimits): number | null {
  if (readOnce(numel, max, limits)) return max;
  const least = Math.min(MIN_READ_ONCE_WINDOW, max);
  for (let windows = Math.ceil(numel / max); ; windows++) {
    const even = Math.ceil(numel / windows);
    if (even < least) return null;
    // Whole tie chunks where that changes neither the count nor the verdict.
    const aligned = Math.ceil(even / WINDOW_ALIGN) * WINDOW_ALIGN;
    if (aligned <= max && Math.ceil(numel / aligned) === windows && readOnce(numel, aligned, limits))
      return aligned;
    if (readOnce(numel, even, limits)) return even;
  }
}

/**
 * The window that reads once, within the budget, every tensor of `sizes` (element counts) that some
 * window of at least MIN_READ_ONCE_WINDOW elements reads once: the smallest any of them needs, and
 * how many tensors it still leaves to read in part twice. Null where none needs a window below `max`.
 */
export function readOnceWindowFor(
  sizes: readonly number[],
  max: number,
  limits: ReadOnceLimits,
): { window: number; twice: number } | null {
  let window = max;
  for (const numel of new Set(sizes)) {
    const size = Math.min(numel, window);
    const n = readOnceWindow(numel, size, limits);
    if (n !== null && n < size) window = n;
  }
  if (window >= max) return null;
  return { window, twice: sizes.filter((numel) => !readOnce(numel, Math.min(numel, window), limits)).length };
}

/** What readOnceWindow rounds a window up to where it can: whole tie chunks of elements. */
const WINDOW_ALIGN = 2 ** 14;

export class WindowCache {
  private slots: Slot[] = [];
  private slotBytes = 0;
  private max = 0;
  private short = 0;
  readonly counts: WindowCacheCounts = { kept: 0, reused: 0, reusedBytes: 0, rereadBytes: 0, wanted: 0 };

  constructor(private readonly device: GPUDevice) {}

  /** Bytes the slots take now. */
  get bytes(): number {
    return this.slots.length * this.slotBytes;
  }

  /**
   * Bytes beyond the room it had that would have kept every window a tensor's passes wanted kept: the
   * most of any tensor, each counted in its own windows (the sets grow with a larger dtype, and the
   * slots with them).
   */
  get shortBytes(): number {
    return this.short;
  }

  /** Notes that one tensor's passes would keep `windows` windows of the slots' size, room or not. */
  want(windows: number): void {
    this.counts.wanted = Math.max(this.counts.wanted, windows);
    this.short = Math.max(this.short, Math.max(0, windows - this.max) * this.slotBytes);
  }

  /**
   * Sizes the cache for windows of `slotBytes` (the sets' inputs) and at most `max` of them: slots of
   * another size, and those past `max`, are destroyed (the sets grew, so nothing of theirs is queued).
   */
  fit(slotBytes: number, max: number): void {
    if (slotBytes !== this.slotBytes) {
      this.destroy();
      this.slotBytes = slotBytes;
    }
    this.max = max;
    while (this.slots.length > max) this.slots.pop()?.buffer.destroy();
  }

  /**
   * Takes `holding`, a set's inputs buffer that holds window `tag` of job `job`, and returns the
   * buffer the set gets instead: one a slot held spare (no window, or an earlier job's), or a new one
   * while there are fewer than the most. Null where every slot holds a window of this job: then
   * nothing changes.
   */
  take(holding: GPUBuffer, tag: string, job: number): GPUBuffer | null {
    let slot = this.slots.find((s) => s.job < job || s.tag === null);
    if (!slot && this.slots.length < this.max) {
      slot = {
        buffer: this.device.createBuffer({
          label: `MergeEngine.kept${this.slots.length}`,
          size: this.slotBytes,
          usage: inputUsage(),
        }),
        tag: null,
        job,
      };
      this.slots.push(slot);
    }
    if (!slot) return null;
    const spare = slot.buffer;
    Object.assign(slot, { buffer: holding, tag, job });
    this.counts.kept++;
    return spare;
  }

  /**
   * The buffer that holds window `tag`, traded for `spare` (a set's inputs, whose window is not
   * wanted any more); null where no slot holds it.
   */
  give(tag: string, spare: GPUBuffer): GPUBuffer | null {
    const slot = this.slots.find((s) => s.tag === tag);
    if (!slot) return null;
    const held = slot.buffer;
    Object.assign(slot, { buffer: spare, tag: null });
    return held;
  }

  /** Counts a window taken from the cache instead of reading `bytes` of inputs. */
  reused(bytes: number): void {
    this.counts.reused++;
    this.counts.reusedBytes += bytes;
  }

  /** Counts `bytes` of inputs read again (the window was read before in this job, and not kept). */
  reread(bytes: number): void {
    this.counts.rereadBytes += bytes;
  }

  destroy(): void {
    for (const s of this.slots) s.buffer.destroy();
    this.slots = [];
  }
}

/**
 * What a cache did between two reports of one engine (an engine kept across jobs counts them all):
 * its counts' differences, and what it holds and wants as of `after` (`wanted` is the most since
 * the engine was made).
 */
export function windowCacheSince(before: WindowCacheReport, after: WindowCacheReport): WindowCacheReport {
  return {
    ...after,
    kept: after.kept - before.kept,
    reused: after.reused - before.reused,
    reusedBytes: after.reusedBytes - before.reusedBytes,
    rereadBytes: after.rereadBytes - before.rereadBytes,
  };
}

// Small pure functions of the GPU engine's geometry: 4-byte padding, words per window, dispatch
// splitting under the per-dimension workgroup limit, window sizing to the binding limits and to
// one memory budget in bytes.
import { dtypeBits, type Dtype } from '../../format/dtype.ts';
import { numel } from '../../format/safetensors.ts';
import type { MethodPlan } from '../../methods/registry/index.ts';

/** Invocations per workgroup of every kernel (WORKGROUP in shaders/common/window.wgsl). */
export const WORKGROUP_SIZE = 256;
/** Elements per invocation of the histogram kernel (2 × PAIRS in topk_hist.wgsl). */
export const COUNT_ITEMS = 8;
/** Elements per invocation of the statistics kernel (2 × PAIRS in stats.wgsl): amortises its flush. */
export const STATS_ITEMS = 128;
/** Element pairs per TIES tie-count block (TIE_BLOCK_PAIRS in shaders/common/window.wgsl). */
export const TIE_BLOCK_PAIRS = 16;
/** u32 words per tie block: its tie bits, one per element (TIE_BLOCK_WORDS in window.wgsl). */
export const TIE_BLOCK_WORDS = 1;
/** Elements per invocation of the merge kernels: one pair, one output word of a 16-bit output. */
export const MERGE_ITEMS = 2;
/** The engine caps windows here so that element indices and word offsets stay far inside u32. */
export const MAX_WINDOW_ELEMENTS = 2 ** 30;

/** Rounds a byte count up to a multiple of 4 (writeBuffer, copies and bindings need it). */
export function pad4(bytes: number): number {
  return Math.ceil(bytes / 4) * 4;
}

/**
 * Bytes of one input slot of `elements` elements: a multiple of 16, so that kernels may read the
 * slots as vec4 words (topk_count.wgsl).
 */
export function slotBytesFor(elements: number, inBytes: number): number {
  return Math.ceil((elements * inBytes) / 16) * 16;
}

/** u32 words that hold `count` elements of `bytesPerElement` bytes. */
export function wordsFor(count: number, bytesPerElement: number): number {
  return Math.ceil((count * bytesPerElement) / 4);
}

export interface Dispatch {
  x: number;
  y: number;
  /** Workgroups that do work (x·y may exceed it by less than one row). */
  groups: number;
}

/** Lays `groups` workgroups out as x × y with x ≤ maxPerDimension (kernels skip the surplus). */
export function splitDispatch(groups: number, maxPerDimension: number): Dispatch {
  if (!Number.isInteger(groups) || groups < 0) throw new RangeError(`bad workgroup count ${groups}`);
  if (groups <= maxPerDimension) return { x: groups, y: 1, groups };
  const y = Math.ceil(groups / maxPerDimension);
  if (y > maxPerDimension)
    throw new RangeError(`${groups} workgroups exceed ${maxPerDimension}² per dispatch`);
  return { x: Math.ceil(groups / y), y, groups };
}

/** Workgroups of an element-wise merge: one invocation per element pair. */
export function mergeGroups(count: number): number {
  return Math.ceil(count / (WORKGROUP_SIZE * MERGE_ITEMS));
}

/** Workgroups of the histogram kernel (TIES top-k). */
export function countGroups(count: number): number {
  return Math.ceil(count / (WORKGROUP_SIZE * COUNT_ITEMS));
}

/** Workgroups of the statistics kernel. */
export function statsGroups(count: number): number {
  return Math.ceil(count / (WORKGROUP_SIZE * STATS_ITEMS));
}

/** The engine's own cap on a window's elements (GpuEngineOptions.maxWindowElements, --window-elements). */
export const DEFAULT_WINDOW_ELEMENTS = 2 ** 23;

/**
 * The engine's default memory budget: every window buffer it holds, on the GPU and in JavaScript,
 * together. 512 MiB keeps bf16 merges of up to 8 agents at the engine's 2^23-element cap (so the
 * budget costs them no speed) while 16 f32 agents get windows small enough to stay inside it.
 */
export const DEFAULT_MEMORY_BUDGET = 512 * 2 ** 20;

/**
 * Tie-count rows per agent that a method's merge ranks ties in: one for TIES's top-k threshold, two
 * for Model Breadcrumbs (its top-k and its outlier cut), none without a top-k (DARE drops at random).
 */
export function tieRowsPerAgent(plan: MethodPlan): number {
  switch (plan.sparsify) {
    case 'topk':
      return 1;
    case 'band':
      return 2;
    default:
      return 0;
  }
}

/** Tie blocks (TIE_BLOCK_WORDS u32 each per row) of a window: WORKGROUP_SIZE / TIE_BLOCK_PAIRS per merge workgroup. */
function tieBlocksFor(elements: number): number {
  return Math.ceil(elements / (WORKGROUP_SIZE * MERGE_ITEMS)) * (WORKGROUP_SIZE / TIE_BLOCK_PAIRS);
}

/** The room one buffer set needs for windows of up to `elements` elements (bytes, 4-padded). */
export interface WindowCapacity {
  /** N+1 input slots of pad4(elements · inBytes) bytes each. */
  inputBytes: number;
  outputBytes: number;
  /**
   * The tie marks: TIE_BLOCK_WORDS u32 per tie block of TIE_BLOCK_PAIRS element pairs, tieRows rows per
   * agent (Model Breadcrumbs cuts ties at two thresholds, TIES at one, the other methods none).
   */
  tieBytes: number;
}

/** `tieRows`: tie-count rows per agent of the method the windows are for (tieRowsPerAgent). */
export function windowCapacity(
  elements: number,
  agents: number,
  inBytes: number,
  outBytes: number,
  tieRows: number,
): WindowCapacity {
  return {
    inputBytes: (agents + 1) * slotBytesFor(elements, inBytes),
    outputBytes: pad4(elements * outBytes),
    tieBytes: tieRows * agents * tieBlocksFor(elements) * TIE_BLOCK_WORDS * 4,
  };
}

/**
 * Bytes the window buffers of both sets take together: per set the inputs twice (the GPU binding and
 * the staging memory the reads land in: a mappable buffer, or host memory where uploads are copied),
 * the output three times (the GPU binding, the mappable readback buffer, and a third for the
 * writer's queued copy, which is read from the mapping in place and held in writeBehind's ChunkPool)
 * and the tie counts.
 * Buffers of fixed size (parameters, counters, histograms: a few KiB) are not counted.
 */
export function windowMemory(c: WindowCapacity): number {
  return 2 * (2 * c.inputBytes + 3 * c.outputBytes + c.tieBytes);
}

export interface WindowLimits {
  agents: number;
  inBytes: number;
  outBytes: number;
  /** Tie-count rows per agent of the method (tieRowsPerAgent): 0 where nothing ranks ties. */
  tieRows: number;
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupsPerDimension: number;
  /** The engine's own cap (latency per submit). */
  maxWindowElements: number;
  /** Bytes all window buffers may take together (bytesPerWindowElement); none: no byte cap. */
  memoryBudget?: number;
}

/** A merge's tensors as window sizing sees them. */
export interface MergeSizes {
  /** Each tensor's elements, in the order given. */
  numels: number[];
  /** The most elements of any (0 for none). */
  largest: number;
  /** The widest dtype's bytes per element, 2 at least (every window holds 16-bit slots or wider). */
  widestBytes: number;
}

/** Element counts and widest dtype of the tensors a merge will window (the engine card's and the CLI's estimates). */
export function mergeSizes(tensors: readonly { shape: readonly number[]; dtype: Dtype }[]): MergeSizes {
  const numels = tensors.map((t) => numel(t.shape));
  return {
    numels,
    largest: numels.reduce((most, n) => Math.max(most, n), 0),
    widestBytes: tensors.reduce((widest, t) => Math.max(widest, dtypeBits(t.dtype) / 8), 2),
  };
}

/**
 * The most elements one window may hold: N+1 input slots in one binding, the output and the TIES
 * tie blocks each within one binding, the merge dispatch within the 2D grid, and
 * both buffer sets within the memory budget.
 */
export function windowElements(limits: WindowLimits): number {
  const binding = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  const slotBytes = Math.floor(binding / (limits.agents + 1) / 16) * 16;
  const byInputs = Math.floor(slotBytes / limits.inBytes);
  const byOutput = Math.floor(binding / limits.outBytes);
  const maxGroups = limits.maxComputeWorkgroupsPerDimension ** 2;
  const byDispatch = maxGroups * WORKGROUP_SIZE * MERGE_ITEMS;
  const tieWords = limits.tieRows * limits.agents * TIE_BLOCK_WORDS;
  const byTieCounts =
    tieWords === 0
      ? Infinity
      : Math.floor(binding / 4 / tieWords / (WORKGROUP_SIZE / TIE_BLOCK_PAIRS)) *
        WORKGROUP_SIZE *
        MERGE_ITEMS;
  const elements = Math.min(
    Math.floor(limits.maxWindowElements),
    MAX_WINDOW_ELEMENTS,
    byInputs,
    byOutput,
    byDispatch,
    byTieCounts,
  );
  if (elements < 1) throw new RangeError('the device limits leave no room for a window of one element');
  return fitBudget(elements, limits);
}

/** The most bytes of the read-ahead, whatever the budget (ReadAhead, src/driver/read-ahead.ts). */
const MAX_READ_AHEAD_BYTES = 64 * 2 ** 20;

/** What the model-level driver holds of a memory budget besides the engine's windows. */
export interface DriverMemory {
  /** The next tensor's first bytes of every model, read while the engine merges this one (ReadAhead). */
  readAhead: number;
  /** Output bytes queued for the file system while the merge goes on (writeBehind, src/io/sink.ts). */
  writeBehind: number;
}

/**
 * The driver's part of a memory budget. Read-ahead: an eighth of the budget, at most
 * MAX_READ_AHEAD_BYTES, and no more than one window of 16-bit elements per model (`agents` + 1 of
 * them), since the engine reads a tensor's later windows ahead itself. Write-behind: one model's share
 * of that, one window of 16-bit output. The windows get the rest (fitBudget).
 */
export function driverMemory(budget: number, agents: number, maxWindowElements: number): DriverMemory {
  const readAhead = Math.min(
    MAX_READ_AHEAD_BYTES,
    Math.floor(budget / 8),
    (agents + 1) * Math.floor(maxWindowElements) * 2,
  );
  return { readAhead, writeBehind: Math.floor(readAhead / (agents + 1)) };
}

/**
 * The largest window of at most `elements` whose buffers (windowMemory) fit the memory budget beside
 * what the driver holds (driverMemory).
 */
function fitBudget(elements: number, limits: WindowLimits): number {
  const budget = limits.memoryBudget;
  if (budget === undefined) return elements;
  const { agents, inBytes, outBytes, tieRows } = limits;
  const { readAhead, writeBehind } = driverMemory(budget, agents, limits.maxWindowElements);
  const ahead = readAhead + writeBehind;
  const cost = (n: number): number =>
    windowMemory(windowCapacity(n, agents, inBytes, outBytes, tieRows)) + ahead;
  if (cost(elements) <= budget) return elements;
  // cost grows with n, by at most a few words of padding over its linear part: bisect.
  let low = 0;
  let high = elements;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (cost(mid) <= budget) low = mid;
    else high = mid;
  }
  if (low < 1)
    throw new RangeError(
      `a memory budget of ${budget} bytes leaves no room for a window of one element (${cost(1)} bytes)`,
    );
  return low;
}

export interface Window {
  index: number;
  start: number;
  count: number;
}

/** The windows of a tensor, in order. */
export function tensorWindows(numel: number, windowSize: number): Window[] {
  const out: Window[] = [];
  for (let start = 0, index = 0; start < numel; start += windowSize, index++) {
    out.push({ index, start, count: Math.min(windowSize, numel - start) });
  }
  return out;
}

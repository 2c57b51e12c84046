// Small pure functions of the GPU engine's geometry: 4-byte padding, words per window, dispatch
// splitting under the per-dimension workgroup limit, window sizing to the binding limits.

/** Invocations per workgroup of every kernel (WORKGROUP in shaders/common/window.wgsl). */
export const WORKGROUP_SIZE = 256;
/** Elements per invocation of the histogram kernel (2 × PAIRS in topk_hist.wgsl). */
export const COUNT_ITEMS = 8;
/** Elements per invocation of the statistics kernel (2 × PAIRS in stats.wgsl): amortises its flush. */
export const STATS_ITEMS = 128;
/** Element pairs per TIES tie-count block (TIE_BLOCK_PAIRS in shaders/common/window.wgsl). */
export const TIE_BLOCK_PAIRS = 32;
/** Elements per invocation of the merge kernels: one pair, one output word of a 16-bit output. */
export const MERGE_ITEMS = 2;
/** The engine caps windows here so that element indices and word offsets stay far inside u32. */
export const MAX_WINDOW_ELEMENTS = 2 ** 30;

/** Rounds a byte count up to a multiple of 4 (writeBuffer, copies and bindings need it). */
export function pad4(bytes: number): number {
  return Math.ceil(bytes / 4) * 4;
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

export interface WindowLimits {
  agents: number;
  inBytes: number;
  outBytes: number;
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupsPerDimension: number;
  /** The engine's own cap (memory, latency per submit). */
  maxWindowElements: number;
}

/**
 * The most elements one window may hold: N+1 input slots in one binding, the output and the TIES
 * per-workgroup tie counts each within one binding, and the merge dispatch within the 2D grid.
 */
export function windowElements(limits: WindowLimits): number {
  const binding = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  const slotBytes = Math.floor(binding / (limits.agents + 1) / 4) * 4;
  const byInputs = Math.floor(slotBytes / limits.inBytes);
  const byOutput = Math.floor(binding / limits.outBytes);
  const maxGroups = limits.maxComputeWorkgroupsPerDimension ** 2;
  const byDispatch = maxGroups * WORKGROUP_SIZE * MERGE_ITEMS;
  const byTieCounts = Math.floor(binding / 4 / limits.agents) * WORKGROUP_SIZE * MERGE_ITEMS;
  const elements = Math.min(
    Math.floor(limits.maxWindowElements),
    MAX_WINDOW_ELEMENTS,
    byInputs,
    byOutput,
    byDispatch,
    byTieCounts,
  );
  if (elements < 1) throw new RangeError('the device limits leave no room for a window of one element');
  return elements;
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

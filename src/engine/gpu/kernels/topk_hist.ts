// Pipeline module of shaders/topk_hist.wgsl: one radix digit's |τ| histogram per agent for the TIES
// top-k select, with each bin's least and greatest lower bits on the first digit (CPU reference:
// stepTopK and settleSingleKey in src/methods/select.ts, topKTaus in src/methods/reference.ts).

import type { FloatDtype } from '../../../format/dtype.ts';
import { RADIX_BINS } from '../../../methods/select.ts';
import source from '../../../../shaders/topk_hist.wgsl?raw';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { WINDOW_SOURCES } from './sources.ts';

export const TOPK_HIST_KERNEL: KernelSpec = {
  name: 'topk_hist',
  sources: [...WINDOW_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 2, name: 'histogram', type: 'storage' },
    { binding: 3, name: 'agents', type: 'read-only-storage' },
  ],
  constants: ['IN_DTYPE', 'AGENTS'],
};

/** u32 words per histogram bin (SLOTS in topk_hist.wgsl). */
export const TOPK_HIST_SLOTS = 4;

export interface HistogramBin {
  count: number;
  /** Least and greatest lower bits (below the digit) of the bin's keys; counted on the first digit only. */
  least: number;
  greatest: number;
}

/**
 * Bin `bin` of agent t's row in the read-back histogram of a digit at `shift`. The kernel keeps bounds
 * only of the bin's "odd" keys (lower bits not all zero) and counts them: where every key is odd
 * those are the bounds, where none is every key's lower bits are 0, and otherwise the bin holds a
 * zero and the greatest odd bits.
 */
export function histogramBin(words: Uint32Array, t: number, bin: number, shift: number): HistogramBin {
  const at = (t * RADIX_BINS + bin) * TOPK_HIST_SLOTS;
  const count = words[at] ?? 0;
  const odd = words[at + 1] ?? 0;
  const greatestOdd = (words[at + 3] ?? 0) - 1;
  if (odd === 0) return { count, least: 0, greatest: 0 };
  return { count, least: odd === count ? 2 ** shift - (words[at + 2] ?? 0) : 0, greatest: greatestOdd };
}

/** Agent t's counts of a digit of `bits` bits (the stepTopK input). */
export function histogramCounts(words: Uint32Array, t: number, bits: number): Uint32Array {
  const counts = new Uint32Array(1 << bits);
  const row = t * RADIX_BINS * TOPK_HIST_SLOTS;
  for (let d = 0; d < counts.length; d++) counts[d] = words[row + d * TOPK_HIST_SLOTS] ?? 0;
  return counts;
}

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function topKHistRequest(inDtype: FloatDtype, agents: number): KernelRequest {
  return { spec: TOPK_HIST_KERNEL, constants: { IN_DTYPE: DTYPE_CODE[inDtype], AGENTS: agents } };
}

export function createTopKHistKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  agents: number,
): Promise<Kernel> {
  return buildKernel(device, topKHistRequest(inDtype, agents));
}

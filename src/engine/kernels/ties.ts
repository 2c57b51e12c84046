// Pipeline module of shaders/ties.wgsl: TIES (after the top-k select of topk_hist / topk_ties /
// topk_scan) and DARE-TIES with DARE = 1 (CPU reference: tiesCombine in src/methods/reference.ts).

import source from '../../../shaders/ties.wgsl?raw';
import { createKernel, type Kernel, type KernelSpec } from './kernel.ts';
import { MERGE_BINDINGS, mergeConstants, type MergeVariant } from './merge-bindings.ts';
import { FINITE_SOURCE, RNG_SOURCE, WINDOW_SOURCES } from './sources.ts';

export const TIES_KERNEL: KernelSpec = {
  name: 'ties',
  sources: [...WINDOW_SOURCES, FINITE_SOURCE, RNG_SOURCE, source],
  bindings: [
    ...MERGE_BINDINGS.filter((b) => b.binding < 4),
    { binding: 4, name: 'tie_prefix', type: 'read-only-storage' },
    ...MERGE_BINDINGS.filter((b) => b.binding > 4),
  ],
  constants: ['IN_DTYPE', 'OUT_DTYPE', 'AGENTS', 'DARE', 'TIE_BREAK'],
};

/** `tieBreak`: some agent keeps part of its threshold's ties (ranks from topk_ties / topk_scan). */
export function createTiesKernel(
  device: GPUDevice,
  variant: MergeVariant,
  dare: boolean,
  tieBreak: boolean,
): Promise<Kernel> {
  return createKernel(device, TIES_KERNEL, {
    ...mergeConstants(variant),
    DARE: dare ? 1 : 0,
    TIE_BREAK: tieBreak ? 1 : 0,
  });
}

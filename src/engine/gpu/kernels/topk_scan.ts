// Pipeline module of shaders/topk_scan.wgsl: from the tie marks of topk_ties, counted across the
// blocks and windows of a tensor, each tie row's cutoff, below which the merge keeps ties at a TIES
// threshold (so they are kept lowest index first).

import source from '../../../../shaders/topk_scan.wgsl?raw';
import { buildKernel, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { WINDOW_SOURCES } from './sources.ts';

export const TOPK_SCAN_KERNEL: KernelSpec = {
  name: 'topk_scan',
  sources: [...WINDOW_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 2, name: 'tie_counts', type: 'read-only-storage' },
    { binding: 3, name: 'agents', type: 'read-only-storage' },
    { binding: 4, name: 'carry', type: 'storage' },
  ],
  constants: ['AGENTS', 'BAND'],
};

/**
 * u32 words of the carry buffer per agent: a cutoff and a count of earlier windows' ties for each of
 * its two tie rows (topk_scan.wgsl's layout; the merge binds the cutoffs as tie_cutoffs).
 */
export const TIE_CARRY_WORDS = 4;

/** `band`: also the rows of the outlier thresholds' ties (Model Breadcrumbs). */
export function topKScanRequest(agents: number, band = false): KernelRequest {
  return { spec: TOPK_SCAN_KERNEL, constants: { AGENTS: agents, BAND: band ? 1 : 0 } };
}

export function createTopKScanKernel(device: GPUDevice, agents: number, band = false): Promise<Kernel> {
  return buildKernel(device, topKScanRequest(agents, band));
}

// Pipeline module of shaders/topk_scan.wgsl: prefix sums of the per-workgroup tie counts across the
// workgroups and windows of a tensor, so ties at a TIES threshold are kept lowest index first.

import source from '../../../shaders/topk_scan.wgsl?raw';
import { createKernel, type Kernel, type KernelSpec } from './kernel.ts';
import { WINDOW_SOURCES } from './sources.ts';

export const TOPK_SCAN_KERNEL: KernelSpec = {
  name: 'topk_scan',
  sources: [...WINDOW_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 2, name: 'tie_counts', type: 'storage' },
    { binding: 4, name: 'carry', type: 'storage' },
  ],
  constants: ['AGENTS', 'BAND'],
};

/** `band`: also the rows of the outlier thresholds' ties (Model Breadcrumbs). */
export function createTopKScanKernel(device: GPUDevice, agents: number, band = false): Promise<Kernel> {
  return createKernel(device, TOPK_SCAN_KERNEL, { AGENTS: agents, BAND: band ? 1 : 0 });
}

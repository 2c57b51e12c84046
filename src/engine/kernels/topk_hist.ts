// Pipeline module of shaders/topk_hist.wgsl: one radix digit's |τ| histogram per agent for the TIES
// top-k select (CPU reference: stepTopK in src/methods/select.ts, topKTaus in src/methods/reference.ts).

import type { FloatDtype } from '../../format/dtype.ts';
import source from '../../../shaders/topk_hist.wgsl?raw';
import { createKernel, DTYPE_CODE, type Kernel, type KernelSpec } from './kernel.ts';
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

export function createTopKHistKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  agents: number,
): Promise<Kernel> {
  return createKernel(device, TOPK_HIST_KERNEL, { IN_DTYPE: DTYPE_CODE[inDtype], AGENTS: agents });
}

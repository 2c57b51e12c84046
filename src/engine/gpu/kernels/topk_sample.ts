// Pipeline module of shaders/topk_sample.wgsl: a strided sample of each agent's |τ| keys, read back
// by the TIES top-k select to bracket its thresholds (src/engine/gpu/topk-select.ts).

import type { FloatDtype } from '../../../format/dtype.ts';
import source from '../../../../shaders/topk_sample.wgsl?raw';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { WINDOW_SOURCES } from './sources.ts';

export const TOPK_SAMPLE_KERNEL: KernelSpec = {
  name: 'topk_sample',
  sources: [...WINDOW_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 2, name: 'histogram', type: 'storage' },
  ],
  constants: ['IN_DTYPE', 'AGENTS', 'SAMPLE_PAIRS'],
};

/** A key that no |τ| has (NO_KEY in topk_sample.wgsl): a sample slot past the window's end. */
export const NO_KEY = 0xffffffff;

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function topKSampleRequest(inDtype: FloatDtype, agents: number, samplePairs: number): KernelRequest {
  return {
    spec: TOPK_SAMPLE_KERNEL,
    constants: {
      IN_DTYPE: DTYPE_CODE[inDtype],
      AGENTS: agents,
      SAMPLE_PAIRS: samplePairs,
    },
  };
}

export function createTopKSampleKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  agents: number,
  samplePairs: number,
): Promise<Kernel> {
  return buildKernel(device, topKSampleRequest(inDtype, agents, samplePairs));
}

// Pipeline module of shaders/linear.wgsl (CPU reference: linearCombine in src/methods/reference.ts).

import source from '../../../../shaders/linear.wgsl?raw';
import { buildKernel, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { MERGE_BINDINGS, mergeConstants, type MergeVariant } from './merge-bindings.ts';
import { MERGE_SOURCES } from './sources.ts';

export const LINEAR_KERNEL: KernelSpec = {
  name: 'linear',
  sources: [...MERGE_SOURCES, source],
  bindings: MERGE_BINDINGS,
  constants: ['IN_DTYPE', 'OUT_DTYPE', 'AGENTS', 'CORRECT_DIVISION'],
};

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function linearRequest(variant: MergeVariant): KernelRequest {
  return { spec: LINEAR_KERNEL, constants: mergeConstants(variant) };
}

export function createLinearKernel(device: GPUDevice, variant: MergeVariant): Promise<Kernel> {
  return buildKernel(device, linearRequest(variant));
}

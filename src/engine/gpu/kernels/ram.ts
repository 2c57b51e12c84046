// Pipeline module of shaders/ram.wgsl (RAM, RAM+, RAM+s, tensor-local RAM+; CPU reference:
// ramCombine in src/methods/reference.ts).

import source from '../../../../shaders/ram.wgsl?raw';
import { buildKernel, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { MERGE_BINDINGS, mergeConstants, type MergeVariant } from './merge-bindings.ts';
import { MERGE_SOURCES } from './sources.ts';

export const RAM_KERNEL: KernelSpec = {
  name: 'ram',
  sources: [...MERGE_SOURCES, source],
  bindings: MERGE_BINDINGS,
  constants: ['IN_DTYPE', 'OUT_DTYPE', 'AGENTS', 'CORRECT_DIVISION'],
};

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function ramRequest(variant: MergeVariant): KernelRequest {
  return { spec: RAM_KERNEL, constants: mergeConstants(variant) };
}

export function createRamKernel(device: GPUDevice, variant: MergeVariant): Promise<Kernel> {
  return buildKernel(device, ramRequest(variant));
}

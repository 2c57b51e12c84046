// Pipeline modules of shaders/slerp_sums.wgsl (the sums of the base and the agent a SLERP needs before
// its first merged value) and shaders/slerp.wgsl (the merge with the coefficients those sums give).
// CPU reference: accumulateSlerpSums, slerpCoefficients and slerpApply in src/methods/slerp.ts.

import type { FloatDtype } from '../../../format/dtype.ts';
import sumsSource from '../../../../shaders/slerp_sums.wgsl?raw';
import source from '../../../../shaders/slerp.wgsl?raw';
import type { SlerpSums } from '../../../methods/slerp.ts';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { MERGE_BINDINGS, mergeConstants, type MergeVariant } from './merge-bindings.ts';
import { MERGE_SOURCES, WINDOW_SOURCES } from './sources.ts';

/** Workgroups of the sums pass (the shader's SUM_GROUPS); each writes three f32. */
export const SUM_GROUPS = 16;

export const SLERP_SUMS_KERNEL: KernelSpec = {
  name: 'slerp_sums',
  sources: [...WINDOW_SOURCES, sumsSource],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 4, name: 'norms', type: 'storage' },
  ],
  constants: ['IN_DTYPE'],
};

export const SLERP_KERNEL: KernelSpec = {
  name: 'slerp',
  sources: [...MERGE_SOURCES, source],
  bindings: MERGE_BINDINGS,
  constants: ['IN_DTYPE', 'OUT_DTYPE', 'AGENTS'],
};

export const SLERP_SUMS_BYTES = SUM_GROUPS * 3 * 4;

/** Adds one window's partial sums (f32, [group][v0², v1², v0·v1]) into `sums` in f64. */
export function addSlerpSums(sums: SlerpSums, partials: Float32Array): void {
  for (let g = 0; g < SUM_GROUPS; g++) {
    sums.base += partials[3 * g]!;
    sums.agent += partials[3 * g + 1]!;
    sums.cross += partials[3 * g + 2]!;
  }
}

/** The sums kernel's spec and override constants (KernelCache keys them). */
export function slerpSumsRequest(inDtype: FloatDtype): KernelRequest {
  return { spec: SLERP_SUMS_KERNEL, constants: { IN_DTYPE: DTYPE_CODE[inDtype] } };
}

/** The merge kernel's spec and override constants (it divides nothing: no CORRECT_DIVISION). */
export function slerpRequest(variant: MergeVariant): KernelRequest {
  const { IN_DTYPE, OUT_DTYPE, AGENTS } = mergeConstants(variant);
  return { spec: SLERP_KERNEL, constants: { IN_DTYPE: IN_DTYPE!, OUT_DTYPE: OUT_DTYPE!, AGENTS: AGENTS! } };
}

export function createSlerpSumsKernel(device: GPUDevice, inDtype: FloatDtype): Promise<Kernel> {
  return buildKernel(device, slerpSumsRequest(inDtype));
}

export function createSlerpKernel(device: GPUDevice, variant: MergeVariant): Promise<Kernel> {
  return buildKernel(device, slerpRequest(variant));
}

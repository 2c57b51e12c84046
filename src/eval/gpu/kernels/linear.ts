// Pipeline module of shaders/eval/linear.wgsl: x · Wᵀ (+ bias) for one block of W's rows, W in its
// stored dtype (CPU reference: linear in src/eval/reference.ts).

import source from '../../../../shaders/eval/linear.wgsl?raw';
import type { FloatDtype } from '../../../format/dtype.ts';
import { DTYPE_CODE, type KernelRequest, type KernelSpec } from '../../../engine/gpu/kernels/kernel.ts';
import { WEIGHT_SOURCES } from './sources.ts';

/** Rows and outputs per workgroup (TM, TN of the shader). */
export const LINEAR_TILE_ROWS = 32;
export const LINEAR_TILE_OUTS = 64;

export const EVAL_LINEAR_KERNEL: KernelSpec = {
  name: 'eval_linear',
  sources: [...WEIGHT_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'x', type: 'read-only-storage' },
    { binding: 2, name: 'weight', type: 'read-only-storage' },
    { binding: 3, name: 'bias', type: 'read-only-storage' },
    { binding: 4, name: 'out', type: 'storage' },
  ],
  constants: ['W_DTYPE'],
};

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function evalLinearRequest(dtype: FloatDtype): KernelRequest {
  return { spec: EVAL_LINEAR_KERNEL, constants: { W_DTYPE: DTYPE_CODE[dtype] } };
}

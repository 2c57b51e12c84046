// Pipeline module of shaders/eval/rms_norm.wgsl: RMSNorm per group of a row, one workgroup per group
// (CPU reference: groupRmsNorm in src/eval/reference.ts).

import source from '../../../../shaders/eval/rms_norm.wgsl?raw';
import type { FloatDtype } from '../../../format/dtype.ts';
import { DTYPE_CODE, type KernelRequest, type KernelSpec } from '../../../engine/gpu/kernels/kernel.ts';
import { WEIGHT_SOURCES } from './sources.ts';

export const EVAL_RMS_NORM_KERNEL: KernelSpec = {
  name: 'eval_rms_norm',
  sources: [...WEIGHT_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'x', type: 'read-only-storage' },
    { binding: 2, name: 'weight', type: 'read-only-storage' },
    { binding: 3, name: 'out', type: 'storage' },
  ],
  constants: ['W_DTYPE'],
};

export function evalRmsNormRequest(dtype: FloatDtype): KernelRequest {
  return { spec: EVAL_RMS_NORM_KERNEL, constants: { W_DTYPE: DTYPE_CODE[dtype] } };
}

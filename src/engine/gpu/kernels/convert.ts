// Pipeline module of shaders/convert.wgsl: re-encodes a window from one float dtype to another
// (the codec's conformance vehicle; CPU reference: src/format/dtype.ts).

import type { FloatDtype } from '../../../format/dtype.ts';
import source from '../../../../shaders/convert.wgsl?raw';
import { createKernel, DTYPE_CODE, type Kernel, type KernelSpec } from './kernel.ts';
import { ELEMENTWISE_SOURCES } from './sources.ts';

export const CONVERT_KERNEL: KernelSpec = {
  name: 'convert',
  sources: [...ELEMENTWISE_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 2, name: 'output', type: 'storage' },
  ],
  constants: ['IN_DTYPE', 'OUT_DTYPE'],
};

export function createConvertKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  outDtype: FloatDtype,
): Promise<Kernel> {
  return createKernel(device, CONVERT_KERNEL, {
    IN_DTYPE: DTYPE_CODE[inDtype],
    OUT_DTYPE: DTYPE_CODE[outDtype],
  });
}

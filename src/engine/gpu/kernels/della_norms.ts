// Pipeline module of shaders/della_norms.wgsl: per agent, the L1 norms of τ and of the entries DELLA
// kept, as partial sums per invocation laid out as DARE's (kernels/dare_norms.ts adds them up; CPU
// reference: accumulateDellaNorms in src/methods/della.ts).

import type { FloatDtype } from '../../../format/dtype.ts';
import source from '../../../../shaders/della_norms.wgsl?raw';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { WINDOW_SOURCES } from './sources.ts';

export const DELLA_NORMS_KERNEL: KernelSpec = {
  name: 'della_norms',
  sources: [...WINDOW_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 4, name: 'norms', type: 'storage' },
    { binding: 5, name: 'della_factors', type: 'read-only-storage' },
  ],
  constants: ['IN_DTYPE', 'AGENTS'],
};

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function dellaNormsRequest(inDtype: FloatDtype, agents: number): KernelRequest {
  return { spec: DELLA_NORMS_KERNEL, constants: { IN_DTYPE: DTYPE_CODE[inDtype], AGENTS: agents } };
}

export function createDellaNormsKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  agents: number,
): Promise<Kernel> {
  return buildKernel(device, dellaNormsRequest(inDtype, agents));
}

// Pipeline module of shaders/dare_norms.wgsl: per agent, the L1 norms of τ and of its DARE-kept entries,
// as partial sums per invocation (CPU reference: accumulateDareNorms in src/methods/dare-norms.ts).

import type { FloatDtype } from '../../../format/dtype.ts';
import source from '../../../../shaders/dare_norms.wgsl?raw';
import type { DareNorms } from '../../../methods/dare-norms.ts';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { RNG_SOURCE, WINDOW_SOURCES } from './sources.ts';
import { WORKGROUP_SIZE } from '../plumbing.ts';

/** Workgroups per window (the `NORM_GROUPS` of the shader); each invocation writes 2 partial sums per agent. */
export const NORM_GROUPS = 16;
const INVOCATIONS = NORM_GROUPS * WORKGROUP_SIZE;

export const DARE_NORMS_KERNEL: KernelSpec = {
  name: 'dare_norms',
  sources: [...WINDOW_SOURCES, RNG_SOURCE, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 3, name: 'agents', type: 'read-only-storage' },
    { binding: 4, name: 'norms', type: 'storage' },
  ],
  constants: ['IN_DTYPE', 'AGENTS'],
};

export function dareNormsBytes(agents: number): number {
  return INVOCATIONS * agents * 2 * 4;
}

/** Adds one window's partial sums (f32, [invocation][agent][before, after]) into `norms` in f64. */
export function addDareNorms(norms: DareNorms, partials: Float32Array): void {
  const n = norms.before.length;
  for (let i = 0; i < INVOCATIONS; i++)
    for (let t = 0; t < n; t++) {
      norms.before[t]! += partials[(i * n + t) * 2]!;
      norms.after[t]! += partials[(i * n + t) * 2 + 1]!;
    }
}

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function dareNormsRequest(inDtype: FloatDtype, agents: number): KernelRequest {
  return { spec: DARE_NORMS_KERNEL, constants: { IN_DTYPE: DTYPE_CODE[inDtype], AGENTS: agents } };
}

export function createDareNormsKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  agents: number,
): Promise<Kernel> {
  return buildKernel(device, dareNormsRequest(inDtype, agents));
}

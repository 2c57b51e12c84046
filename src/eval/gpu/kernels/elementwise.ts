// Pipeline modules of shaders/eval/elementwise.wgsl (add, silu · up) and shaders/eval/gather.wgsl
// (CPU reference: add, siluMul, gather in src/eval/reference.ts). One invocation per element.

import elementwise from '../../../../shaders/eval/elementwise.wgsl?raw';
import gather from '../../../../shaders/eval/gather.wgsl?raw';
import type { KernelRequest, KernelSpec } from '../../../engine/gpu/kernels/kernel.ts';

/** Invocations per workgroup of both shaders. */
export const ELEMENTWISE_WORKGROUP = 256;

export const EVAL_ELEMENTWISE_KERNEL: KernelSpec = {
  name: 'eval_elementwise',
  sources: [elementwise],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'a', type: 'read-only-storage' },
    { binding: 2, name: 'b', type: 'read-only-storage' },
    { binding: 3, name: 'out', type: 'storage' },
  ],
  constants: ['OP'],
};

/** The OP codes of elementwise.wgsl. */
export const ELEMENTWISE_OP = { add: 0, siluMul: 1 } as const;

export function evalElementwiseRequest(op: keyof typeof ELEMENTWISE_OP): KernelRequest {
  return { spec: EVAL_ELEMENTWISE_KERNEL, constants: { OP: ELEMENTWISE_OP[op] } };
}

export const EVAL_GATHER_KERNEL: KernelSpec = {
  name: 'eval_gather',
  sources: [gather],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'x', type: 'read-only-storage' },
    { binding: 2, name: 'index', type: 'read-only-storage' },
    { binding: 3, name: 'out', type: 'storage' },
  ],
  constants: [],
};

export function evalGatherRequest(): KernelRequest {
  return { spec: EVAL_GATHER_KERNEL, constants: {} };
}

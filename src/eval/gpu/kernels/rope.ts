// Pipeline module of shaders/eval/rope.wgsl: rotary embedding, rotate_half convention, one invocation
// per rotated pair (CPU reference: rope in src/eval/reference.ts).

import source from '../../../../shaders/eval/rope.wgsl?raw';
import type { KernelRequest, KernelSpec } from '../../../engine/gpu/kernels/kernel.ts';

export const EVAL_ROPE_KERNEL: KernelSpec = {
  name: 'eval_rope',
  sources: [source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'x', type: 'read-only-storage' },
    { binding: 2, name: 'cos_table', type: 'read-only-storage' },
    { binding: 3, name: 'sin_table', type: 'read-only-storage' },
    { binding: 4, name: 'out', type: 'storage' },
  ],
  constants: [],
};

export function evalRopeRequest(): KernelRequest {
  return { spec: EVAL_ROPE_KERNEL, constants: {} };
}

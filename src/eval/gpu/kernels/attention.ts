// Pipeline module of shaders/eval/attention.wgsl: causal attention with a running softmax, one
// workgroup per (row, query head) (CPU reference: attention in src/eval/reference.ts).

import source from '../../../../shaders/eval/attention.wgsl?raw';
import type { KernelRequest, KernelSpec } from '../../../engine/gpu/kernels/kernel.ts';

/** The largest head size the kernel holds (WG · DIMS of the shader). */
export const ATTENTION_MAX_HEAD_DIM = 256;

export const EVAL_ATTENTION_KERNEL: KernelSpec = {
  name: 'eval_attention',
  sources: [source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'q', type: 'read-only-storage' },
    { binding: 2, name: 'k', type: 'read-only-storage' },
    { binding: 3, name: 'v', type: 'read-only-storage' },
    { binding: 4, name: 'seq_start', type: 'read-only-storage' },
    { binding: 5, name: 'out', type: 'storage' },
  ],
  constants: [],
};

export function evalAttentionRequest(): KernelRequest {
  return { spec: EVAL_ATTENTION_KERNEL, constants: {} };
}

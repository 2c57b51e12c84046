// Pipeline module of the one matmul, shaders/eval/linear.wgsl (x · Wᵀ + bias, W in its stored dtype):
// the forward pass's linear layers (src/eval/gpu, CPU reference: linear in src/eval/reference.ts) and
// the low-rank product of a LoRA agent's τ rows, left · rightᵀ with W = right in F32 and no bias (CPU
// reference: lowRankReference in src/methods/lora.ts). One spec, so one pipeline per dtype serves both.

import codec from '../../../../shaders/common/codec.wgsl?raw';
import weight from '../../../../shaders/eval/weight.wgsl?raw';
import source from '../../../../shaders/eval/linear.wgsl?raw';
import type { FloatDtype } from '../../../format/dtype.ts';
import { DTYPE_CODE, type KernelRequest, type KernelSpec } from './kernel.ts';

/** Rows and columns of the output per workgroup (TM, TN of the shader). */
export const LOW_RANK_TILE_ROWS = 32;
export const LOW_RANK_TILE_COLS = 64;

/** The Params struct of linear.wgsl, in words. */
export const LOW_RANK_PARAMS_WORDS = 8;

export const MATMUL_KERNEL: KernelSpec = {
  name: 'matmul',
  sources: [codec, weight, source],
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
export function matmulRequest(dtype: FloatDtype): KernelRequest {
  return { spec: MATMUL_KERNEL, constants: { W_DTYPE: DTYPE_CODE[dtype] } };
}

export const LOW_RANK_REQUEST: KernelRequest = matmulRequest('F32');

/** The Params words for `rows` × `cols` outputs of rank `rank`: x · Wᵀ over all of W, no bias. */
export function lowRankParams(rows: number, cols: number, rank: number): Uint32Array {
  return new Uint32Array([rows, rank, cols, cols, 0, 0, DTYPE_CODE.F32, 0]);
}

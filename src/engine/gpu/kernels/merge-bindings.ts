// Bindings and constants the element-wise merge kernels share (ram, linear, task_arithmetic, ties).

import type { FloatDtype } from '../../../format/dtype.ts';
import { DTYPE_CODE, type BindingSpec } from './kernel.ts';

export const MERGE_BINDINGS: readonly BindingSpec[] = [
  { binding: 0, name: 'params', type: 'uniform' },
  { binding: 1, name: 'inputs', type: 'read-only-storage' },
  { binding: 2, name: 'output', type: 'storage' },
  { binding: 3, name: 'agents', type: 'read-only-storage' },
  { binding: 5, name: 'flags', type: 'storage' },
];

/** Offsets in the `flags` counters of shaders/common/finite.wgsl. */
export const FLAG_NON_FINITE = 0;
export const FLAG_OVERFLOW = 1;
/** flags[FLAG_MODELS + m]: non-finite elements where model m (0 = base) holds NaN or ±Inf. */
export const FLAG_MODELS = 2;

export function flagCount(agents: number): number {
  return FLAG_MODELS + agents + 1;
}

export interface MergeVariant {
  inDtype: FloatDtype;
  outDtype: FloatDtype;
  agents: number;
  /** Correct the GPU's f32 quotients (shaders/common/quotient.wgsl): where its division is not exact. */
  correctDivision: boolean;
}

export function mergeConstants(v: MergeVariant): Record<string, number> {
  return {
    IN_DTYPE: DTYPE_CODE[v.inDtype],
    OUT_DTYPE: DTYPE_CODE[v.outDtype],
    AGENTS: v.agents,
    CORRECT_DIVISION: v.correctDivision ? 1 : 0,
  };
}

// Bindings and constants the element-wise merge kernels share (ram, linear, task_arithmetic, ties).

import type { FloatDtype } from '../../format/dtype.ts';
import { DTYPE_CODE, type BindingSpec } from './kernel.ts';

export const MERGE_BINDINGS: readonly BindingSpec[] = [
  { binding: 0, name: 'params', type: 'uniform' },
  { binding: 1, name: 'inputs', type: 'read-only-storage' },
  { binding: 2, name: 'output', type: 'storage' },
  { binding: 3, name: 'agents', type: 'read-only-storage' },
];

export interface MergeVariant {
  inDtype: FloatDtype;
  outDtype: FloatDtype;
  agents: number;
}

export function mergeConstants(v: MergeVariant): Record<string, number> {
  return { IN_DTYPE: DTYPE_CODE[v.inDtype], OUT_DTYPE: DTYPE_CODE[v.outDtype], AGENTS: v.agents };
}

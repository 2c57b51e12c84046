// Pipeline module of shaders/task_arithmetic.wgsl: task arithmetic, and DARE-linear with DARE = 1
// (CPU reference: taskArithmeticCombine with denseTaus / dareTaus in src/methods/reference.ts).

import source from '../../../shaders/task_arithmetic.wgsl?raw';
import { BRANCHES_BINDING, BRANCHES_SOURCE } from './branches.ts';
import { createKernel, type Kernel, type KernelSpec } from './kernel.ts';
import { MERGE_BINDINGS, mergeConstants, type MergeVariant } from './merge-bindings.ts';
import { MERGE_SOURCES, RNG_SOURCE } from './sources.ts';

export const TASK_ARITHMETIC_KERNEL: KernelSpec = {
  name: 'task_arithmetic',
  sources: [...MERGE_SOURCES, RNG_SOURCE, BRANCHES_SOURCE, source],
  bindings: [...MERGE_BINDINGS, BRANCHES_BINDING],
  constants: ['IN_DTYPE', 'OUT_DTYPE', 'AGENTS', 'DARE', 'COUNT_BRANCHES'],
};

export function createTaskArithmeticKernel(
  device: GPUDevice,
  variant: MergeVariant,
  dare: boolean,
  countBranches = false,
): Promise<Kernel> {
  return createKernel(device, TASK_ARITHMETIC_KERNEL, {
    ...mergeConstants(variant),
    DARE: dare ? 1 : 0,
    COUNT_BRANCHES: countBranches ? 1 : 0,
  });
}

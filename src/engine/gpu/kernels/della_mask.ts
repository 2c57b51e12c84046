// Pipeline module of shaders/della_mask.wgsl: DELLA's rank-weighted seeded drop over a window of whole
// slabs, one workgroup per agent and rank group, writing the factor each agent's τ is multiplied by
// (CPU reference: dellaMask and dellaAgentTaus in src/methods/della.ts).

import type { FloatDtype } from '../../../format/dtype.ts';
import source from '../../../../shaders/della_mask.wgsl?raw';
import type { DellaGroups, DellaThreshold } from '../../../methods/della.ts';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { QUOTIENT_SOURCE, RNG_SOURCE, WINDOW_SOURCES } from './sources.ts';

export const DELLA_MASK_KERNEL: KernelSpec = {
  name: 'della_mask',
  sources: [...WINDOW_SOURCES, QUOTIENT_SOURCE, RNG_SOURCE, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 2, name: 'della_sort', type: 'storage' },
    { binding: 4, name: 'della', type: 'read-only-storage' },
    { binding: 5, name: 'della_factors', type: 'storage' },
  ],
  constants: ['IN_DTYPE', 'AGENTS', 'CORRECT_DIVISION'],
};

/** The MODE_* of the shader: how an agent's kept entries are scaled. */
export const DELLA_MODE = { inverseP: 0, factor: 1, keepAll: 2 } as const;

/** Words of DellaSpec before its agents, and per agent. */
export const DELLA_SPEC_HEADER_WORDS = 4;
export const DELLA_AGENT_WORDS = 4;

/** One agent's row of DellaSpec: its threshold (null: density ≥ 1, all kept) and the rule's factor. */
export interface DellaAgentSpec {
  threshold: DellaThreshold | null;
  /** Multiply kept entries by 1/p (`inverseP`) or by `factor`. */
  inverseP: boolean;
  factor: number;
}

/** The smallest power of two ≥ n (n ≥ 1). */
export function pow2AtLeast(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/** DellaSpec's bytes for a tensor's groups and the agents' thresholds and factors. */
export function encodeDellaSpec(groups: DellaGroups, agents: readonly DellaAgentSpec[]): ArrayBuffer {
  const buffer = new ArrayBuffer((DELLA_SPEC_HEADER_WORDS + DELLA_AGENT_WORDS * agents.length) * 4);
  const u32 = new Uint32Array(buffer);
  const f32 = new Float32Array(buffer);
  u32.set([groups.length, groups.inner, pow2AtLeast(groups.length), 0]);
  agents.forEach((a, t) => {
    const at = DELLA_SPEC_HEADER_WORDS + DELLA_AGENT_WORDS * t;
    u32[at] = a.threshold?.low ?? 0;
    u32[at + 1] = a.threshold?.span ?? 0;
    u32[at + 2] = !a.threshold ? DELLA_MODE.keepAll : a.inverseP ? DELLA_MODE.inverseP : DELLA_MODE.factor;
    f32[at + 3] = a.factor;
  });
  return buffer;
}

/** Workgroups of a window of `count` elements (whole groups): one per agent and group. */
export function dellaMaskGroups(count: number, length: number, agents: number): number {
  return length === 0 ? 0 : agents * (count / length);
}

/** Bytes of the sort scratch for windows of up to `elements` elements. */
export function dellaSortBytes(elements: number, groups: DellaGroups, agents: number): number {
  if (groups.length === 0) return 8;
  return Math.max(8, agents * Math.floor(elements / groups.length) * pow2AtLeast(groups.length) * 8);
}

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function dellaMaskRequest(
  inDtype: FloatDtype,
  agents: number,
  correctDivision: boolean,
): KernelRequest {
  return {
    spec: DELLA_MASK_KERNEL,
    constants: { IN_DTYPE: DTYPE_CODE[inDtype], AGENTS: agents, CORRECT_DIVISION: correctDivision ? 1 : 0 },
  };
}

export function createDellaMaskKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  agents: number,
  correctDivision: boolean,
): Promise<Kernel> {
  return buildKernel(device, dellaMaskRequest(inDtype, agents, correctDivision));
}

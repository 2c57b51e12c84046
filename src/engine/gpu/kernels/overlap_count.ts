// Pipeline module of shaders/overlap_count.wgsl, the counting pass before a tensor-local RAM+ merge, and
// the host side of its counters (CPU reference: referenceStats' changed and unique in
// src/methods/reference.ts).

import type { FloatDtype } from '../../../format/dtype.ts';
import { at } from '../../../io/checked.ts';
import source from '../../../../shaders/overlap_count.wgsl?raw';
import type { AgentChanges } from '../../../methods/stats.ts';
import { WORKGROUP_SIZE } from '../plumbing.ts';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { WINDOW_SOURCES } from './sources.ts';

export const OVERLAP_COUNT_KERNEL: KernelSpec = {
  name: 'overlap_count',
  sources: [...WINDOW_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 2, name: 'counters', type: 'storage' },
  ],
  constants: ['IN_DTYPE', 'AGENTS'],
};

/** Elements per invocation (2 × PAIRS in overlap_count.wgsl): 8-bit fields hold up to 254 of them. */
export const OVERLAP_COUNT_ITEMS = 254;

export function overlapCountGroups(count: number): number {
  return Math.ceil(count / (WORKGROUP_SIZE * OVERLAP_COUNT_ITEMS));
}

/** What the pass counts: each agent's changed and unique elements, and the non-finite ones as the statistics do. */
export interface OverlapCounts extends AgentChanges {
  nonFinite: number;
  /** Per model, base first: of the non-finite elements, those where it holds NaN or ±Inf. */
  nonFiniteModels: number[];
}

/** Number of u32 counters for N agents: changed, unique, nonFinite, nonFiniteModels. */
export function overlapCountWords(agents: number): number {
  return 3 * agents + 2;
}

export function emptyOverlapCounts(agents: number): OverlapCounts {
  const zeros = (n: number): number[] => new Array<number>(n).fill(0);
  return { changed: zeros(agents), unique: zeros(agents), nonFinite: 0, nonFiniteModels: zeros(agents + 1) };
}

/** Adds one window's counters into `counts`. */
export function addOverlapCounters(counts: OverlapCounts, counters: Uint32Array): void {
  const n = counts.changed.length;
  const word = (i: number): number => at(counters, i, 'overlap counter');
  for (let t = 0; t < n; t++) {
    counts.changed[t] = at(counts.changed, t, 'changed') + word(t);
    counts.unique[t] = at(counts.unique, t, 'unique') + word(n + t);
  }
  counts.nonFinite += word(2 * n);
  for (let m = 0; m <= n; m++)
    counts.nonFiniteModels[m] = at(counts.nonFiniteModels, m, 'nonFiniteModels') + word(2 * n + 1 + m);
}

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function overlapCountRequest(inDtype: FloatDtype, agents: number): KernelRequest {
  return { spec: OVERLAP_COUNT_KERNEL, constants: { IN_DTYPE: DTYPE_CODE[inDtype], AGENTS: agents } };
}

export function createOverlapCountKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  agents: number,
): Promise<Kernel> {
  return buildKernel(device, overlapCountRequest(inDtype, agents));
}

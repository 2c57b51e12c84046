// Pipeline module of shaders/stats.wgsl and the host side of its counters: their layout and their
// exact accumulation into TensorStats (CPU reference: accumulateStats in src/methods/reference.ts).

import type { FloatDtype } from '../../format/dtype.ts';
import source from '../../../shaders/stats.wgsl?raw';
import { MAGNITUDE_BINS } from '../../methods/stats.ts';
import type { TensorStats } from '../types.ts';
import { createKernel, DTYPE_CODE, type Kernel, type KernelSpec } from './kernel.ts';
import { WINDOW_SOURCES } from './sources.ts';

export const STATS_KERNEL: KernelSpec = {
  name: 'stats',
  sources: [...WINDOW_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 2, name: 'counters', type: 'storage' },
  ],
  constants: ['IN_DTYPE', 'AGENTS'],
};

export interface StatsLayout {
  overlap: number;
  sign: number;
  magnitude: number;
  ulp: number;
  /** Number of u32 counters. */
  count: number;
}

/** Offsets of the counter groups for N agents (the overrides at the top of stats.wgsl). */
export function statsLayout(agents: number): StatsLayout {
  const overlap = agents + 1;
  const sign = overlap + agents * agents;
  const magnitude = sign + 1;
  const ulp = magnitude + agents * MAGNITUDE_BINS.length;
  return { overlap, sign, magnitude, ulp, count: ulp + agents };
}

/** Adds one window's counters into `stats`; counts[0] is the window's remainder. */
export function addStatsCounters(stats: TensorStats, counters: Uint32Array, windowCount: number): void {
  const n = stats.changed.length;
  const layout = statsLayout(n);
  let changedSomewhere = 0;
  for (let c = 1; c <= n; c++) {
    stats.counts[c]! += counters[c]!;
    changedSomewhere += counters[c]!;
  }
  stats.counts[0]! += windowCount - changedSomewhere;
  for (let t = 0; t < n; t++) {
    for (let k = 0; k < n; k++) stats.overlap[t]![k]! += counters[layout.overlap + t * n + k]!;
    for (let b = 0; b < MAGNITUDE_BINS.length; b++) {
      stats.magnitude[t]![b]! += counters[layout.magnitude + t * MAGNITUDE_BINS.length + b]!;
    }
    stats.oneUlp[t]! += counters[layout.ulp + t]!;
  }
  stats.signConflicts += counters[layout.sign]!;
}

export function createStatsKernel(device: GPUDevice, inDtype: FloatDtype, agents: number): Promise<Kernel> {
  return createKernel(device, STATS_KERNEL, { IN_DTYPE: DTYPE_CODE[inDtype], AGENTS: agents });
}

// Pipeline module of shaders/stats.wgsl and the host side of its counters: their layout and their
// exact accumulation into TensorStats (CPU reference: accumulateStats in src/methods/reference.ts).

import type { FloatDtype } from '../../../format/dtype.ts';
import source from '../../../../shaders/stats.wgsl?raw';
import { MAGNITUDE_BINS, PAIRS_MAX_AGENTS } from '../../../methods/stats.ts';
import type { TensorStats } from '../../../methods/tensors.ts';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
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
  /** nonFinite at nonFinite, nonFiniteModels[m] at nonFinite + 1 + m. */
  nonFinite: number;
  /** pairs[t][u] for t < u at pairs + t·N + u (an N×N region, only for N ≤ PAIRS_MAX_AGENTS). */
  pairs: number;
  /** sets[m], m = 1..2^N − 1, at sets + m (only for N ≤ PAIRS_MAX_AGENTS). */
  sets: number;
  /** Number of u32 counters. */
  count: number;
}

/** Offsets of the counter groups for N agents (the overrides at the top of stats.wgsl). */
export function statsLayout(agents: number): StatsLayout {
  const overlap = agents + 1;
  const sign = overlap + agents * agents;
  const magnitude = sign + 1;
  const ulp = magnitude + agents * MAGNITUDE_BINS.length;
  const nonFinite = ulp + agents;
  const pairs = nonFinite + agents + 2;
  const small = agents <= PAIRS_MAX_AGENTS;
  const sets = pairs + (small ? agents * agents : 0);
  const count = sets + (small ? 2 ** agents : 0);
  return { overlap, sign, magnitude, ulp, nonFinite, pairs, sets, count };
}

/** Adds one window's counters into `stats`; counts[0] is the window's remainder after the classified and non-finite elements. */
export function addStatsCounters(stats: TensorStats, counters: Uint32Array, windowCount: number): void {
  const n = stats.changed.length;
  const layout = statsLayout(n);
  let changedSomewhere = 0;
  for (let c = 1; c <= n; c++) {
    stats.counts[c]! += counters[c]!;
    changedSomewhere += counters[c]!;
  }
  const nonFinite = counters[layout.nonFinite]!;
  const unchanged = windowCount - changedSomewhere - nonFinite;
  stats.counts[0]! += unchanged;
  stats.nonFinite += nonFinite;
  for (let m = 0; m <= n; m++) stats.nonFiniteModels[m]! += counters[layout.nonFinite + 1 + m]!;
  for (let t = 0; t < n; t++) {
    for (let k = 0; k < n; k++) stats.overlap[t]![k]! += counters[layout.overlap + t * n + k]!;
    for (let b = 0; b < MAGNITUDE_BINS.length; b++) {
      stats.magnitude[t]![b]! += counters[layout.magnitude + t * MAGNITUDE_BINS.length + b]!;
    }
    stats.oneUlp[t]! += counters[layout.ulp + t]!;
  }
  stats.signConflicts += counters[layout.sign]!;
  if (stats.sets) {
    stats.sets[0]! += unchanged;
    for (let m = 1; m < stats.sets.length; m++) stats.sets[m]! += counters[layout.sets + m]!;
  }
  // The shader counts each pair once (t < u); the diagonal is left to deriveTensorStats.
  const pairs = stats.pairs;
  if (!pairs) return;
  for (let t = 0; t < n; t++)
    for (let u = t + 1; u < n; u++) {
      const both = counters[layout.pairs + t * n + u]!;
      pairs[t]![u]! += both;
      pairs[u]![t]! += both;
    }
}

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function statsRequest(inDtype: FloatDtype, agents: number): KernelRequest {
  return { spec: STATS_KERNEL, constants: { IN_DTYPE: DTYPE_CODE[inDtype], AGENTS: agents } };
}

export function createStatsKernel(device: GPUDevice, inDtype: FloatDtype, agents: number): Promise<Kernel> {
  return buildKernel(device, statsRequest(inDtype, agents));
}

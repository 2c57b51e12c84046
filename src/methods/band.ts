// Model Breadcrumbs' sparsification (mergekit `magnitude_outliers`) as counts: per tensor and agent the
// floor(gamma·n) largest |τ| are dropped as outliers and the floor(density·n) next largest are kept.
// Shared by the CPU reference, the CPU engine and the GPU engine, which all rank |τ| with TIES's
// order (larger first, equal magnitudes lowest index first).
import { topKCount } from './select.ts';

/** Model Breadcrumbs' share of outliers dropped where nothing says (mergekit's default). */
export const DEFAULT_GAMMA = 0.01;

export interface BandCounts {
  /** The largest |τ| dropped. */
  outliers: number;
  /** Entries kept after them. */
  kept: number;
}

/**
 * mergekit's counts: target = floor(density·n), top = floor(gamma·n), and where target + top > n the
 * outliers shrink to n − target. From density 1 up nothing is dropped (mergekit returns τ as it is).
 * Where top is 0 mergekit's slice `[n_bot:-0]` keeps nothing at all; here it keeps the target largest
 * (no outlier dropped), as the method means: gamma·n < 1 (tensors under 100 elements at gamma 0.01)
 * would otherwise erase the agent's whole change to that tensor.
 */
export function bandCounts(density: number, gamma: number, n: number): BandCounts {
  if (!Number.isFinite(gamma))
    throw new RangeError(`breadcrumbs gamma must be a finite number, got ${gamma}`);
  if (density >= 1) return { outliers: 0, kept: n };
  const kept = topKCount(density, n);
  const top = Math.max(0, Math.floor(gamma * n));
  return { outliers: Math.min(top, n - kept), kept };
}

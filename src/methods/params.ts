// The values a merge method reads, as one record: every method's parameters side by side, each method
// reading those its descriptor lists (registry/). Below the registry, so a descriptor can name them.

/**
 * How DARE rescales the entries it keeps: `density` multiplies them by 1/density (the DARE paper, this
 * tool's flags and studio); `l1` makes each agent's masked tensor keep its L1 norm (mergekit's
 * `rescale: true`); `none` keeps them as they are (mergekit's `rescale: false`).
 */
export type DareRescale = 'density' | 'l1' | 'none';

/** Every parameter's value; a method reads those its descriptor lists. */
export interface ParamValues {
  /** |τ| > epsilon counts as changed (RAM family). Default 1e-5. */
  epsilon: number;
  /** RAM+ family rescale strength. Default 0.1. */
  r: number;
  /** RAM+ clip of ρ. Default 2.0 (ramplus), 0.2 (ramplus_tl). */
  alpha: number;
  /** Task arithmetic / TIES / DARE scaling λ. Default 1. */
  lambda: number;
  /** TIES / DARE density, per agent (same length as the agents). Defaults in defaults.ts. */
  density: number[];
  /** Per-agent weights (linear, task arithmetic, TIES, DARE). Default 1 each. */
  weights: number[];
  /** Divide by Σw (TIES, DARE-TIES: Σw of the agreeing agents). Default: linear, ties, dare_ties. */
  normalize: boolean;
  /** DARE seed (u32). */
  seed: number;
  /** DARE rescale rule; absent means `density`. */
  rescale?: DareRescale;
  /**
   * Per agent, the factor DARE's kept entries of THIS tensor are multiplied by, replacing the one the
   * rescale rule gives from density alone. The driver sets it per tensor for `l1` (a norms pre-pass).
   */
  dareScales?: number[];
  /** Model Breadcrumbs: per agent, the share of the largest |τ| dropped as outliers. Absent: 0.01 each. */
  gamma?: number[];
}

// The merge recipe as plain data: which method, its parameters, and per-agent weights.

export const METHODS = [
  'ram',
  'ramplus',
  'ramplus_soft',
  'ramplus_tl',
  'linear',
  'task_arithmetic',
  'ties',
  'dare_linear',
  'dare_ties',
] as const;

export type MethodName = (typeof METHODS)[number];

export interface MethodParams {
  method: MethodName;
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
}

// What a merge method is, as data: its parameters and defaults, its mergekit mapping, and the plan the
// CPU reference and both engines follow (which λ, which sparsification of τ, which combination). The
// engines interpret the plan; a method never imports engine code.
import type { ParamDefaults, ParameterKey } from '../params.ts';
import type { Sparsify } from '../sparsifiers.ts';

export type { ParameterKey };

/** How each agent's τ is sparsified before it is combined: a key of SPARSIFIERS; absent, dense τ. */
export type { Sparsify };

/**
 * How the agents are combined: `ram` the RAM branches on the changed masks, `linear` the weighted mean
 * of the models, `task_arithmetic` base + λ Σ w τ̂, `ties` the elected-sign disjoint sum, `slerp` the
 * spherical interpolation of the base and one agent (after a pass that sums their dot products).
 */
export type Combine = 'ram' | 'linear' | 'task_arithmetic' | 'ties' | 'slerp';

/**
 * The per-agent λ of the RAM branches: `one` 1, `global` from the whole model's statistics (a pass
 * before the merge), `tensor` from each tensor's own statistics (a pass per tensor).
 */
export type LambdaSource = 'one' | 'global' | 'tensor';

export interface MethodPlan {
  combine: Combine;
  sparsify?: Sparsify;
  lambdas: LambdaSource;
}

export interface MethodDescriptor<N extends string = string> {
  name: N;
  /** One line: the studio's method picker. */
  label: string;
  /** What it does, for the model card and the CLI help. */
  help: string;
  /**
   * The parameters it reads (keys of PARAM_SPECS), in the order the studio shows them; the others are
   * ignored. Its recipe's global and per-model keys, its flags and its widgets follow from them.
   */
  parameters: readonly ParameterKey[];
  /**
   * Defaults of the studio and the CLI flags where they are not the spec's (one value per per-agent
   * parameter); an optional parameter is filled in only where named here.
   */
  defaults: ParamDefaults;
  mergekit: {
    /** Its merge_method in mergekit; absent for this tool's own methods. */
    name?: string;
    /** For an own method: mergekit's closest, named in the exported recipe. */
    closest?: string;
    /** What mergekit assumes where a recipe does not say and that differs from ours (`registry.py`). */
    defaults: ParamDefaults;
  };
  plan: MethodPlan;
  /**
   * λ of agent t from the whole model's statistics (plan.lambdas = `global`); an agent that changed
   * nothing gets 1 without asking.
   */
  globalLambda?: (stats: GlobalCounts, t: number, r: number, alpha: number) => number;
  /** What decides equal magnitudes at a threshold, said in the card and the exported recipe. */
  tieRule?: string;
}

/** The whole model's counts a global λ reads (a subset of ModelStats). */
export interface GlobalCounts {
  changed: readonly number[];
  shared: readonly number[];
  rho: readonly number[];
}

/** Keeps the literal name, so the list of descriptors spells the MethodName union. */
export function defineMethod<const N extends string>(descriptor: MethodDescriptor<N>): MethodDescriptor<N> {
  return descriptor;
}

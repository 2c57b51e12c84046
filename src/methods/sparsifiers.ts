// How an agent's τ is sparsified before it is combined, as one table keyed by a plan's `sparsify`
// (mergekit's sparsify.py dispatches the same four: magnitude, random, magnitude_outliers,
// della_magprune). The CPU reference, the CPU engine, the parameter checks and the recipe writer read
// a sparsifier's behaviour from its entry; the GPU's side is src/engine/gpu/sparsifiers.ts. Adding
// one: its implementation module, an entry here and one there, and the plan of the methods using it.

import { bandTaus, dareDrop, topKTaus, type SparseTaus, type TensorValues } from './taus.ts';
import { accumulateDareNorms, dareScaleRule, type DareNorms } from './l1-norms.ts';
import {
  accumulateDellaWindowNorms,
  checkDellaParams,
  DELLA_PARAMS,
  dellaAgentProblem,
  dellaRecipeNotes,
  dellaScalePlan,
  dellaWindowElements,
  dellaWindowTaus,
} from './della.ts';
import type { DareRescale } from './param-spec.ts';

/**
 * The parameters a sparsifier reads (SparsifierParams has them all; this module sits below the parameter
 * table, which takes the sparsifiers' own parameters from it).
 */
export interface SparsifierParams {
  density: readonly number[];
  seed: number;
  rescale?: DareRescale;
  /** Per agent, this tensor's rescale factor (the L1 rule's, from its norms pass). */
  dareScales?: readonly number[];
  gamma?: readonly number[];
  dellaEpsilon?: readonly number[];
}

/**
 * A sparsifier that decides each element from its own index, the seed and (at most) the whole slab
 * around it, so the engines sparsify a window at a time; its rescale factors may need a norms pass
 * over the whole tensor first (mergekit's L1 rule).
 */
export interface LocalSparsifier {
  /** τ̂ of a window starting at element `start` (`dareScales`: the factors of scalePlan). */
  taus(v: TensorValues, start: number, params: SparsifierParams): SparseTaus;
  /** Elements per window of at most `size`, where its windows must hold whole slabs. */
  windowElements?(shape: readonly number[] | undefined, numel: number, size: number): number;
  /**
   * Its per-agent factors for one tensor: known from the parameters, `pass` for the norms pass
   * (accumulateNorms, then l1Scales), undefined where taus derives them itself.
   */
  scalePlan(params: SparsifierParams): readonly number[] | 'pass' | undefined;
  /** Adds one window into the L1 norms of all and of the kept entries (per agent). */
  accumulateNorms(norms: DareNorms, v: TensorValues, start: number, params: SparsifierParams): void;
  /**
   * Its factor differs per entry, so it moves TIES's sign vote: the kept entries counted as branches
   * need the merge's own factors (a uniform factor per agent changes no sign).
   */
  perEntryScale: boolean;
  /** Throws where the engines refuse its parameters (beyond each one's own range). */
  check?(params: SparsifierParams): void;
}

export interface Sparsifier {
  /** Its name in mergekit's sparsify.py (SparsificationMethod). */
  mergekit: 'magnitude' | 'random' | 'magnitude_outliers' | 'della_magprune';
  /** A window-local one; absent for a ranking over the whole tensor (a top-k by |τ|). */
  local?: LocalSparsifier;
  /** τ̂ of a whole tensor (the CPU reference). */
  taus(v: TensorValues, params: SparsifierParams): SparseTaus;
  /** Why agent t's values are refused together, where each is in its own range (validateParams). */
  agentProblem?(params: SparsifierParams, t: number): string | undefined;
  /** Lines an exported mergekit recipe carries about what differs from mergekit. */
  recipeNotes?(params: SparsifierParams): string[];
}

const RANDOM: Sparsifier = {
  mergekit: 'random',
  local: {
    taus: dareDrop,
    scalePlan: dareScaleRule,
    accumulateNorms: (norms, v, start, params) =>
      accumulateDareNorms(norms, v.name, v.base, v.agents, start, params),
    perEntryScale: false,
  },
  taus: (v, params) => dareDrop(v, 0, params),
  recipeNotes(params) {
    const notes = [
      `DARE seed ${params.seed}: merge-studio's own counter-based RNG (mergekit draws its own).`,
    ];
    if ((params.rescale ?? 'density') === 'density')
      notes.push(
        'merge-studio rescaled the kept DARE entries by 1/density; mergekit has no such rule ' +
          '(rescale: true matches each agent’s L1 norm per tensor), so its result differs.',
      );
    return notes;
  },
};

const MAGPRUNE: Sparsifier = {
  mergekit: 'della_magprune',
  local: {
    taus: dellaWindowTaus,
    windowElements: dellaWindowElements,
    scalePlan: dellaScalePlan,
    accumulateNorms: accumulateDellaWindowNorms,
    perEntryScale: true,
    check: checkDellaParams,
  },
  taus: (v, params) => dellaWindowTaus(v, 0, params),
  agentProblem: dellaAgentProblem,
  recipeNotes: dellaRecipeNotes,
};

/**
 * How each agent's τ is sparsified before it is combined (a key of SPARSIFIERS): `dare` the seeded
 * random drop (rescaled), `topk` TIES's top-k by |τ|, `band` Model Breadcrumbs' top-k without its
 * largest outliers, and MagPrune's seeded drop whose keep probability grows with the rank of |τ| in
 * its row. Absent from a plan: dense τ.
 */
export type Sparsify = 'dare' | 'topk' | 'band' | 'della';

/** Each `sparsify` of a plan: `dare` random, `topk` magnitude, `band` magnitude_outliers, MagPrune. */
export const SPARSIFIERS: Readonly<Record<Sparsify, Sparsifier>> = {
  dare: RANDOM,
  topk: { mergekit: 'magnitude', taus: (v, params) => topKTaus(v, params.density) },
  band: { mergekit: 'magnitude_outliers', taus: (v, params) => bandTaus(v, params.density, params.gamma) },
  della: MAGPRUNE,
};

/** The entry of a plan's sparsify. */
export function sparsifierOf(kind: Sparsify): Sparsifier {
  return SPARSIFIERS[kind];
}

/** The parameters a sparsifier alone reads, spread into PARAM_SPECS in their place (params.ts). */
export const SPARSIFIER_PARAMS = { ...DELLA_PARAMS };

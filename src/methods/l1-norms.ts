// mergekit's L1 rescale (`rescale: true`) of a random drop: each agent's masked τ scaled so that its L1
// norm equals the unmasked one, from both norms summed over the whole tensor in windows; and DARE's
// own norms and factors. dare-norms.ts reads a tensor for them; the GPU sums them in dare_norms.wgsl.

import { taskVector } from './float32.ts';
import type { DareRescale } from './param-spec.ts';
import { dareHash, dareKeepBelow, dareKept, fnv1a32 } from './rng.ts';

/** mergekit's `rescaled_masked_tensor`: below this either norm, the masked tensor is kept unscaled. */
export const L1_RESCALE_EPSILON = 1e-7;

/** Per agent, Σ|τ| over the tensor and Σ|τ| over the entries DARE keeps. */
export interface DareNorms {
  before: number[];
  after: number[];
}

export function emptyDareNorms(agents: number): DareNorms {
  return { before: new Array<number>(agents).fill(0), after: new Array<number>(agents).fill(0) };
}

/** Adds one window (elements start.. of the tensor `name`) into `norms`; τ is the f32 difference. */
export function accumulateDareNorms(
  norms: DareNorms,
  name: string,
  base: ArrayLike<number>,
  agents: readonly ArrayLike<number>[],
  start: number,
  params: { density: readonly number[]; seed: number },
): void {
  const nameHash = fnv1a32(name);
  agents.forEach((agent, t) => {
    const keepBelow = dareKeepBelow(params.density[t]!);
    let before = 0;
    let after = 0;
    for (let i = 0; i < base.length; i++) {
      const magnitude = Math.abs(taskVector(agent[i]!, base[i]!));
      before += magnitude;
      if (dareKept(dareHash(params.seed, nameHash, t, start + i), keepBelow)) after += magnitude;
    }
    norms.before[t]! += before;
    norms.after[t]! += after;
  });
}

/** The factor per agent: ‖τ‖₁ / ‖m⊙τ‖₁, or 1 where either norm is below mergekit's 1e-7. */
export function l1Scales(norms: DareNorms): number[] {
  return norms.before.map((before, t) => {
    const after = norms.after[t]!;
    return before < L1_RESCALE_EPSILON || after < L1_RESCALE_EPSILON ? 1 : before / after;
  });
}

/**
 * DARE's factors of one tensor: the recipe's `dareScales`, 1 each for `none` (and for the L1 rule
 * where nothing is dropped), `pass` for the L1 rule's norms pass, undefined for 1/density.
 */
export function dareScaleRule(params: {
  density: readonly number[];
  rescale?: DareRescale;
  dareScales?: readonly number[];
}): readonly number[] | 'pass' | undefined {
  if (params.dareScales) return params.dareScales;
  const ones = params.density.map(() => 1);
  if (params.rescale === 'none') return ones;
  if (params.rescale !== 'l1') return undefined;
  // Nothing is dropped: both norms are equal, and mergekit returns the tensor as it is.
  return params.density.every((d) => d >= 1) ? ones : 'pass';
}

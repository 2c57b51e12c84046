// DARE's rescale factors per tensor: mergekit's rule (`rescale: true`) scales each agent's masked task
// vector so that its L1 norm equals the unmasked one, which needs both norms of the whole tensor
// before the first merged value: a pre-pass, streamed in windows (on the GPU: shaders/dare_norms.wgsl).

import { decodeFloats, dtypeBits } from '../format/dtype.ts';
import { throwIfAborted } from '../io/abort.ts';
import type { TensorInput } from './tensors.ts';
import { taskVector } from './float32.ts';
import { dareHash, dareKeepBelow, dareKept, fnv1a32 } from './rng.ts';
import { methodOf } from './registry/index.ts';
import type { MethodParams } from './types.ts';

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
  params: Pick<MethodParams, 'density' | 'seed'>,
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
 * Where a DARE merge of one tensor gets its per-agent factors: `undefined` for 1/density (from density
 * alone, in the kernels) and for methods that are not DARE; the factors themselves where they are
 * known without reading the tensor; `pass` when the L1 rule needs the norms pre-pass.
 */
export function dareScalePlan(params: MethodParams): number[] | 'pass' | undefined {
  if (methodOf(params.method).plan.sparsify !== 'dare') return undefined;
  if (params.dareScales) return params.dareScales;
  const ones = params.density.map(() => 1);
  if (params.rescale === 'none') return ones;
  if (params.rescale !== 'l1') return undefined;
  // Nothing is dropped: both norms are equal, and mergekit returns the tensor as it is.
  return params.density.every((d) => d >= 1) ? ones : 'pass';
}

/** The CPU side of the pre-pass: the factors of `dareScalePlan`, reading the tensor in windows. */
export async function dareScalesFor(
  input: TensorInput,
  params: MethodParams,
  signal?: AbortSignal,
  windowElements = 1 << 20,
): Promise<number[] | undefined> {
  const plan = dareScalePlan(params);
  if (plan !== 'pass') return plan;
  const agents = params.density.length;
  const norms = emptyDareNorms(agents);
  const bytes = dtypeBits(input.dtype) / 8;
  for (let start = 0; start < input.numel; start += windowElements) {
    throwIfAborted(signal);
    const count = Math.min(windowElements, input.numel - start);
    const slots: Float64Array[] = [];
    for (let k = 0; k <= agents; k++) {
      const raw = new Uint8Array(count * bytes);
      await input.read(k, start, count, raw);
      slots.push(decodeFloats(input.dtype, raw, count));
    }
    accumulateDareNorms(norms, input.name, slots[0]!, slots.slice(1), start, params);
  }
  return l1Scales(norms);
}

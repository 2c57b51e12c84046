// DARE's rescale factors per tensor: mergekit's rule (`rescale: true`) scales each agent's masked task
// vector so that its L1 norm equals the unmasked one, which needs both norms of the whole tensor
// before the first merged value: a pre-pass, streamed in windows (on the GPU: shaders/dare_norms.wgsl).

import { decodeFloats, dtypeBits } from '../format/dtype.ts';
import { throwIfAborted } from '../io/abort.ts';
import type { TensorInput } from './tensors.ts';
import { methodOf } from './registry/index.ts';
import { accumulateDareNorms, dareScaleRule, emptyDareNorms, l1Scales } from './l1-norms.ts';
import type { MethodParams } from './types.ts';

export {
  accumulateDareNorms,
  emptyDareNorms,
  L1_RESCALE_EPSILON,
  l1Scales,
  type DareNorms,
} from './l1-norms.ts';

/**
 * Where a DARE merge of one tensor gets its per-agent factors: `undefined` for 1/density (from density
 * alone, in the kernels) and for methods that are not DARE; the factors themselves where they are
 * known without reading the tensor; `pass` when the L1 rule needs the norms pre-pass.
 */
export function dareScalePlan(params: MethodParams): number[] | 'pass' | undefined {
  if (methodOf(params.method).plan.sparsify !== 'dare') return undefined;
  const plan = dareScaleRule(params);
  return plan === undefined || plan === 'pass' ? plan : [...plan];
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

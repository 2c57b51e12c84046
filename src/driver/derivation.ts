// Whether an agent looks fine-tuned from the base: a small, deterministic sample of elements read
// from both (a few short range reads spread over the float tensors, never whole tensors), the share
// of them that is bit-identical, and their cosine and relative distance. Sparse fine-tunes leave many
// elements exactly as they were; dense float32 fine-tunes change nearly all, but stay close.
import { decodeFloats, dtypeBits, isMergeableDtype, type FloatDtype } from '../format/dtype.ts';
import { recodeFloats } from '../format/precision.ts';
import type { Model, ModelTensor } from '../format/model.ts';
import { numel } from '../format/safetensors.ts';

/** Below this share of bit-identical elements an agent does not look derived from the base. */
export const DERIVATION_WARN_SHARE = 0.05;
/**
 * Unless, although nearly every element changed, the sample stays this aligned with the base: two
 * SB3 checkpoints of one training run have cosine 0.97, unrelated policies about 0.
 */
export const DERIVATION_MIN_COSINE = 0.8;

export interface SampleOptions {
  /** Elements sampled at most (all of them when the float tensors hold fewer). */
  maxElements?: number;
  /** Contiguous runs the sample is read in: one range read per run and model. */
  runs?: number;
}

/** One contiguous range of a tensor's elements to compare. */
export interface SampleRun {
  tensor: string;
  start: number;
  count: number;
}

export interface DerivationSample {
  /** Float tensors present in both models with the same shape, that were sampled from. */
  tensors: number;
  sampled: number;
  identical: number;
  /** identical / sampled; 0 when nothing could be sampled. */
  share: number;
  /** cos(agent, base) over the sampled elements; null when either is all zeros or nothing was sampled. */
  cosine: number | null;
  /** ‖agent − base‖ / ‖base‖ over the sampled elements; null when the base's sample is all zeros. */
  relativeDistance: number | null;
}

/** How the sample reads: many identical elements, a dense but close fine-tune, or not this base. */
export type DerivationVerdict = 'none' | 'sparse' | 'dense' | 'unrelated';

export function derivationVerdict(sample: DerivationSample): DerivationVerdict {
  if (sample.sampled === 0) return 'none';
  if (sample.share >= DERIVATION_WARN_SHARE) return 'sparse';
  return sample.cosine !== null && sample.cosine >= DERIVATION_MIN_COSINE ? 'dense' : 'unrelated';
}

/**
 * The lineage warning, the studio's and the command line's: `unrelated` names the agents whose
 * verdict is `unrelated`, `see` says where the evidence is. Null when there are none.
 */
export function lineageWarning(unrelated: readonly string[], see: string): string | null {
  if (unrelated.length === 0) return null;
  return (
    `${unrelated.join(', ')} ${unrelated.length === 1 ? 'does' : 'do'} not look fine-tuned from this base ` +
    `(${see}): merging models of different bases gives meaningless weights.`
  );
}

/** What the sample found, in words: the evidence of a verdict. */
export function sampleEvidence(sample: DerivationSample): string {
  const cosine = sample.cosine === null ? 'no cosine' : `cosine ${sample.cosine.toFixed(3)}`;
  return `${(100 * sample.share).toFixed(1)}% of ${sample.sampled} sampled elements identical, ${cosine}`;
}

const DEFAULT_ELEMENTS = 4096;
const DEFAULT_RUNS = 64;

/**
 * `runs` runs of about maxElements / runs elements, their starts evenly spaced over the tensors laid
 * end to end (in the order given); a run ends at its tensor's end. Pure and deterministic.
 */
export function samplePlan(
  tensors: readonly { name: string; numel: number }[],
  options: SampleOptions = {},
): SampleRun[] {
  const maxElements = Math.max(1, Math.floor(options.maxElements ?? DEFAULT_ELEMENTS));
  const total = tensors.reduce((a, t) => a + t.numel, 0);
  if (total === 0) return [];
  if (total <= maxElements)
    return tensors.filter((t) => t.numel > 0).map((t) => ({ tensor: t.name, start: 0, count: t.numel }));
  const runs = Math.max(1, Math.min(Math.floor(options.runs ?? DEFAULT_RUNS), maxElements));
  const length = Math.floor(maxElements / runs);
  const plan: SampleRun[] = [];
  let tensor = 0;
  let before = 0;
  for (let r = 0; r < runs; r++) {
    const at = Math.floor(((r + 0.5) * total) / runs);
    while (before + tensors[tensor]!.numel <= at) before += tensors[tensor++]!.numel;
    const t = tensors[tensor]!;
    const start = at - before;
    const previous = plan[plan.length - 1];
    // Runs never overlap, so no element is counted twice.
    const from =
      previous && previous.tensor === t.name ? Math.max(start, previous.start + previous.count) : start;
    const count = Math.min(length, t.numel - from);
    if (count > 0) plan.push({ tensor: t.name, start: from, count });
  }
  return plan;
}

/**
 * The float tensors both models hold with one shape, in the base's name order: BF16, F16 and F32 alike,
 * as the statistics compare them (an agent saved in f32 over a bf16 base is compared at the base's).
 */
export function comparableTensors(base: Model, agent: Model): ModelTensor[] {
  return [...base.tensors.values()].filter((t) => {
    const other = agent.tensors.get(t.name);
    return (
      other !== undefined &&
      isMergeableDtype(t.dtype) &&
      isMergeableDtype(other.dtype) &&
      other.shape.length === t.shape.length &&
      other.shape.every((d, i) => d === t.shape[i])
    );
  });
}

async function readRun(
  model: Model,
  tensor: ModelTensor,
  run: SampleRun,
  width: number,
): Promise<Uint8Array> {
  return model.source(tensor.file).read(tensor.offset + run.start * width, run.count * width);
}

/** Reads the sample from both models and counts the bit-identical elements. */
export async function sampleDerivation(
  base: Model,
  agent: Model,
  options: SampleOptions & { signal?: AbortSignal } = {},
): Promise<DerivationSample> {
  const tensors = comparableTensors(base, agent);
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const plan = samplePlan(
    tensors.map((t) => ({ name: t.name, numel: numel(t.shape) })),
    options,
  );
  let sampled = 0;
  let identical = 0;
  // Sums for the cosine and the distance, in f64; non-finite elements are left out of them.
  let dot = 0;
  let baseSquares = 0;
  let agentSquares = 0;
  let diffSquares = 0;
  for (const run of plan) {
    options.signal?.throwIfAborted();
    const baseTensor = byName.get(run.tensor)!;
    const agentTensor = agent.tensors.get(run.tensor)!;
    const width = dtypeBits(baseTensor.dtype) / 8;
    const dtype = baseTensor.dtype as FloatDtype;
    const stored = agentTensor.dtype as FloatDtype;
    const [x, own] = await Promise.all([
      readRun(base, baseTensor, run, width),
      readRun(agent, agentTensor, run, dtypeBits(stored) / 8),
    ]);
    // Bit-identical at the base's dtype, the default read precision; the cosine from the agent's own values.
    let y = own;
    if (stored !== dtype) {
      y = new Uint8Array(run.count * width);
      recodeFloats(stored, dtype, own, y, run.count);
    }
    for (let e = 0; e < run.count; e++) {
      let same = true;
      for (let b = e * width; b < (e + 1) * width; b++) if (x[b] !== y[b]) same = false;
      if (same) identical++;
    }
    const a = decodeFloats(dtype, x, run.count);
    const c = decodeFloats(stored, own, run.count);
    for (let e = 0; e < run.count; e++) {
      const u = a[e]!;
      const v = c[e]!;
      if (!Number.isFinite(u) || !Number.isFinite(v)) continue;
      dot += u * v;
      baseSquares += u * u;
      agentSquares += v * v;
      diffSquares += (v - u) * (v - u);
    }
    sampled += run.count;
  }
  return {
    tensors: tensors.length,
    sampled,
    identical,
    share: sampled === 0 ? 0 : identical / sampled,
    cosine: baseSquares > 0 && agentSquares > 0 ? dot / Math.sqrt(baseSquares * agentSquares) : null,
    relativeDistance: baseSquares > 0 ? Math.sqrt(diffSquares / baseSquares) : null,
  };
}

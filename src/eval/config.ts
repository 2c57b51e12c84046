// What the forward pass needs from a model folder's config.json, checked: the family, the widths, the
// norms, the rotary frequencies. Every family and option transformers would run differently from what
// the kernels compute is refused by name, never approximated (SPEC.md, "Evaluation").

/** An evaluation input that cannot be run, naming the model (and tensor or field) and what to do. */
export class EvalError extends Error {
  override readonly name = 'EvalError';
  constructor(
    readonly model: string,
    detail: string,
  ) {
    super(`${model}: ${detail}`);
  }
}

export type Family = 'llama' | 'mistral' | 'qwen2' | 'qwen3';

const ARCHITECTURES: Readonly<Record<string, Family>> = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'mistral',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};

export const SUPPORTED_ARCHITECTURES: readonly string[] = Object.keys(ARCHITECTURES);

/** Rotary scaling as transformers' rope_parameters (or the older rope_scaling) names it. */
export type RopeScaling =
  | { type: 'default' }
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositions: number;
    };

export interface ForwardSpec {
  architecture: string;
  family: Family;
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  vocab: number;
  rmsNormEps: number;
  ropeTheta: number;
  rope: RopeScaling;
  /** Qwen3's per-head RMSNorm of q and k before the rotation. */
  qkNorm: boolean;
  /** The output head is the embedding table (no lm_head.weight). */
  tieEmbeddings: boolean;
  /** Mistral's sliding window (keys further back are masked); 0: none. */
  window: number;
  /** config.json's eos_token_id(s), which end a greedy generation. */
  eosIds: number[];
  maxPositions: number;
}

type Config = Record<string, unknown>;

function int(model: string, config: Config, key: string, fallback?: number): number {
  const value = config[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
    throw new EvalError(
      model,
      `config.json's ${key} is ${JSON.stringify(value)}; the forward pass needs a positive integer.`,
    );
  return value;
}

function positive(model: string, value: unknown, what: string, fallback?: number): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
    throw new EvalError(
      model,
      `config.json's ${what} is ${JSON.stringify(v)}; it must be a positive number.`,
    );
  return v;
}

function ids(value: unknown): number[] {
  if (typeof value === 'number' && Number.isInteger(value)) return [value];
  if (Array.isArray(value))
    return value.filter((v): v is number => typeof v === 'number' && Number.isInteger(v));
  return [];
}

/** rope_parameters (transformers 5) or rope_scaling (earlier), with rope_theta from either place. */
function ropeOf(model: string, config: Config): { theta: number; rope: RopeScaling } {
  const params = (config.rope_parameters ?? config.rope_scaling ?? {}) as Config | null;
  const p: Config = params && typeof params === 'object' ? params : {};
  const theta = positive(model, p.rope_theta ?? config.rope_theta, 'rope_theta', 10000);
  const type = (p.rope_type ?? p.type ?? 'default') as string;
  if (type === 'default') return { theta, rope: { type: 'default' } };
  if (type === 'linear') return { theta, rope: { type, factor: positive(model, p.factor, 'rope factor') } };
  if (type === 'llama3') {
    const rope: RopeScaling = {
      type,
      factor: positive(model, p.factor, 'rope factor'),
      lowFreqFactor: positive(model, p.low_freq_factor, 'rope low_freq_factor'),
      highFreqFactor: positive(model, p.high_freq_factor, 'rope high_freq_factor'),
      originalMaxPositions: positive(
        model,
        p.original_max_position_embeddings,
        'rope original_max_position_embeddings',
        config.max_position_embeddings as number,
      ),
    };
    if (rope.highFreqFactor === rope.lowFreqFactor)
      throw new EvalError(model, "config.json's llama3 rope has high_freq_factor = low_freq_factor.");
    return { theta, rope };
  }
  throw new EvalError(
    model,
    `config.json's rope type "${type}" is not supported yet; the forward pass computes rope none, linear and llama3.`,
  );
}

/** The forward pass's view of a config.json, or an EvalError that says what is not supported. */
export function forwardSpec(model: string, config: Config | undefined): ForwardSpec {
  if (!config) throw new EvalError(model, 'has no config.json; the forward pass needs the model config.');
  const architectures = Array.isArray(config.architectures) ? (config.architectures as unknown[]) : [];
  const architecture = String(architectures[0] ?? config.model_type ?? 'an unnamed architecture');
  const family = ARCHITECTURES[architecture];
  if (!family)
    throw new EvalError(
      model,
      `is a ${architecture}; evaluation runs ${SUPPORTED_ARCHITECTURES.join(', ')} (Gemma 2/3 and Phi-3 next).`,
    );
  const act = config.hidden_act ?? config.hidden_activation ?? 'silu';
  if (act !== 'silu')
    throw new EvalError(
      model,
      `config.json's hidden_act is "${String(act)}"; ${architecture} is run with silu only.`,
    );
  if (config.use_sliding_window === true)
    throw new EvalError(
      model,
      `config.json sets use_sliding_window (per-layer windows), which the forward pass does not run yet.`,
    );
  const layerTypes = Array.isArray(config.layer_types) ? (config.layer_types as unknown[]) : [];
  const other = layerTypes.find((t) => t !== 'full_attention');
  if (other !== undefined)
    throw new EvalError(
      model,
      `config.json's layer_types has "${String(other)}" layers; the forward pass runs full_attention layers only.`,
    );
  const hidden = int(model, config, 'hidden_size');
  const heads = int(model, config, 'num_attention_heads');
  const kvHeads = int(model, config, 'num_key_value_heads', heads);
  if (heads % kvHeads !== 0)
    throw new EvalError(
      model,
      `num_attention_heads ${heads} is not a multiple of num_key_value_heads ${kvHeads}.`,
    );
  const headDim = config.head_dim == null ? hidden / heads : int(model, config, 'head_dim');
  if (!Number.isInteger(headDim) || headDim % 2 !== 0)
    throw new EvalError(model, `head_dim ${headDim} must be an even integer for the rotary embedding.`);
  const partial = config.partial_rotary_factor ?? 1;
  if (partial !== 1)
    throw new EvalError(
      model,
      `config.json's partial_rotary_factor ${String(partial)} is not supported (1 only).`,
    );
  const { theta, rope } = ropeOf(model, config);
  const window =
    family === 'mistral' && typeof config.sliding_window === 'number' ? (config.sliding_window as number) : 0;
  return {
    architecture,
    family,
    layers: int(model, config, 'num_hidden_layers'),
    hidden,
    heads,
    kvHeads,
    headDim,
    intermediate: int(model, config, 'intermediate_size'),
    vocab: int(model, config, 'vocab_size'),
    rmsNormEps: positive(model, config.rms_norm_eps, 'rms_norm_eps', 1e-6),
    ropeTheta: theta,
    rope,
    qkNorm: family === 'qwen3',
    tieEmbeddings: config.tie_word_embeddings === true,
    window,
    eosIds: ids(config.eos_token_id),
    maxPositions: int(model, config, 'max_position_embeddings', 2 ** 31 - 1),
  };
}

const f32 = Math.fround;

/**
 * The rotary inverse frequencies, as transformers computes them in f32: 1 / θ^(2i/d), then the
 * scaling's adjustment (linear: / factor; llama3: long wavelengths / factor, the band between
 * smoothed), each step rounded to f32 as torch's float32 arithmetic rounds it.
 */
export function inverseFrequencies(spec: Pick<ForwardSpec, 'headDim' | 'ropeTheta' | 'rope'>): Float32Array {
  const half = spec.headDim / 2;
  const out = new Float32Array(half);
  for (let i = 0; i < half; i++) {
    const exponent = f32((2 * i) / spec.headDim);
    out[i] = f32(1 / f32(Math.pow(spec.ropeTheta, exponent)));
  }
  const rope = spec.rope;
  if (rope.type === 'linear') for (let i = 0; i < half; i++) out[i] = f32(out[i]! / rope.factor);
  if (rope.type === 'llama3') {
    const lowWavelen = rope.originalMaxPositions / rope.lowFreqFactor;
    const highWavelen = rope.originalMaxPositions / rope.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const inv = out[i]!;
      const wavelen = f32((2 * Math.PI) / inv);
      if (wavelen > lowWavelen) out[i] = f32(inv / rope.factor);
      else if (wavelen >= highWavelen) {
        const smooth = f32(
          f32(f32(rope.originalMaxPositions / wavelen) - rope.lowFreqFactor) /
            (rope.highFreqFactor - rope.lowFreqFactor),
        );
        out[i] = f32(f32(f32(f32(1 - smooth) * inv) / rope.factor) + f32(smooth * inv));
      }
    }
  }
  return out;
}

/**
 * cos and sin tables [rows, headDim/2] for the given positions: the angle rounded to f32 as
 * transformers' f32 product inv_freq · position is, then cos and sin of it (to f32).
 */
export function ropeTables(
  invFreq: Float32Array,
  positions: Int32Array,
): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const cos = new Float32Array(positions.length * half);
  const sin = new Float32Array(positions.length * half);
  for (let r = 0; r < positions.length; r++)
    for (let i = 0; i < half; i++) {
      const angle = f32(invFreq[i]! * positions[r]!);
      cos[r * half + i] = Math.cos(angle);
      sin[r * half + i] = Math.sin(angle);
    }
  return { cos, sin };
}

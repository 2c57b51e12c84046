// A PEFT LoRA adapter read as an agent (SPEC.md "LoRA / PEFT adapters as agents"): its config's
// settings, and the plan of what it does to each base tensor (τ = s·B·A for a target module, a stored
// tensor replacing the base's for modules_to_save, trained biases and stored base layers, DoRA's
// magnitudes). Pure: names, shapes and the config text in; the driver materialises τ from the plan.

import type { Dtype } from './dtype.ts';
import { JsonSyntaxError, parseJson } from './json.ts';

/** The settings of adapter_config.json that decide τ. */
export interface LoraSettings {
  r: number;
  alpha: number;
  rsLora: boolean;
  fanInFanOut: boolean;
  dora: boolean;
  /** PEFT's rank_pattern / alpha_pattern, keys in the file's order (the first match wins). */
  rankPattern: [string, number][];
  alphaPattern: [string, number][];
  baseModel: string | null;
}

/** The adapter cannot be used; the message names the file, the tensor or setting, and why. */
export class AdapterError extends Error {
  override name = 'AdapterError';
  constructor(
    readonly file: string,
    message: string,
    readonly tensor?: string,
  ) {
    super(`${file}${tensor ? `: tensor ${tensor}` : ''}: ${message}`);
  }
}

const PEFT_PREFIX = 'base_model.model.';

/** init_lora_weights values that train the adapter against a changed base (its residual). */
const BASE_CHANGING_INITS = /^(?:pissa|olora|corda|loftq|lora_ga)/i;

/** Variants whose merge is not s·B·A (or DoRA's), refused by name: the key and what it is. */
const VARIANTS: [string, string][] = [
  ['use_qalora', 'QA-LoRA'],
  ['use_bdlora', 'block-diagonal LoRA'],
  ['alora_invocation_tokens', 'activated LoRA (aLoRA)'],
  ['arrow_config', 'Arrow routing'],
  ['kasa_config', 'KaSA'],
  ['monteclora_config', 'MonteCLoRA'],
  ['layer_replication', 'layer replication'],
  ['target_parameters', 'target_parameters (LoRA on raw parameters)'],
  ['trainable_token_indices', 'trainable tokens'],
];

function isSet(value: unknown): boolean {
  if (value === null || value === undefined || value === false) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

function patternOf(value: unknown, key: string, file: string): [string, number][] {
  if (value === undefined || value === null) return [];
  if (typeof value !== 'object' || Array.isArray(value))
    throw new AdapterError(file, `${key} must be an object of module patterns to numbers`);
  return Object.entries(value as Record<string, unknown>).map(([pattern, n]) => {
    if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0)
      throw new AdapterError(
        file,
        `${key}["${pattern}"] must be a positive number, not ${JSON.stringify(n)}`,
      );
    return [pattern, n];
  });
}

/** The LoRA settings of an adapter_config.json text; other adapter types and variants refused by name. */
export function parseLoraConfig(text: string, file: string): LoraSettings {
  let doc: unknown;
  try {
    doc = parseJson(text);
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    throw new AdapterError(file, `is not valid JSON: ${error.message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new AdapterError(file, 'is not a JSON object');
  const c = doc as Record<string, unknown>;
  const type = typeof c.peft_type === 'string' ? c.peft_type : 'unknown';
  if (type !== 'LORA')
    throw new AdapterError(
      file,
      `is a PEFT ${type} adapter: only LoRA adapters (with rsLoRA, DoRA and their patterns) can be merged as agents. ` +
        'Merge it into its base with PEFT (merge_and_unload(), save_pretrained()) and load that folder.',
    );
  for (const [key, what] of VARIANTS)
    if (isSet(c[key]))
      throw new AdapterError(
        file,
        `uses ${what} (${key}), whose merge is not s·B·A: it is not supported as an agent`,
      );
  const init = c.init_lora_weights;
  if (typeof init === 'string' && BASE_CHANGING_INITS.test(init))
    throw new AdapterError(
      file,
      `was initialised with ${init}, which changes the base weights it trains against: ` +
        'save it converted to a plain LoRA (PEFT: path_initial_model_for_weight_conversion) or merge it with PEFT',
    );
  if (isSet(c.loftq_config))
    throw new AdapterError(file, 'uses LoftQ, whose base is quantised and changed: merge it with PEFT');
  const r = c.r;
  const alpha = c.lora_alpha ?? r;
  if (typeof r !== 'number' || !Number.isInteger(r) || r <= 0)
    throw new AdapterError(file, `r must be a positive integer, not ${JSON.stringify(r)}`);
  if (typeof alpha !== 'number' || !Number.isFinite(alpha))
    throw new AdapterError(file, `lora_alpha must be a number, not ${JSON.stringify(alpha)}`);
  return {
    r,
    alpha,
    rsLora: c.use_rslora === true,
    fanInFanOut: c.fan_in_fan_out === true,
    dora: c.use_dora === true,
    rankPattern: patternOf(c.rank_pattern, 'rank_pattern', file),
    alphaPattern: patternOf(c.alpha_pattern, 'alpha_pattern', file),
    baseModel: typeof c.base_model_name_or_path === 'string' ? c.base_model_name_or_path : null,
  };
}

/** PEFT's get_pattern_key: the first pattern that is the module name or a dotted suffix of it (a regex). */
export function patternValue(patterns: readonly [string, number][], module: string): number | undefined {
  for (const [pattern, value] of patterns) {
    let re: RegExp;
    try {
      re = new RegExp(`^(?:.*\\.)?(?:${pattern})$`);
    } catch {
      if (module === pattern || module.endsWith(`.${pattern}`)) return value;
      continue;
    }
    if (re.test(module)) return value;
  }
  return undefined;
}

/** A module's rank, alpha and scaling s (alpha / r, or alpha / √r with rsLoRA). */
export function scalingOf(
  settings: LoraSettings,
  module: string,
): { r: number; alpha: number; scale: number } {
  const r = patternValue(settings.rankPattern, module) ?? settings.r;
  const alpha = patternValue(settings.alphaPattern, module) ?? settings.alpha;
  return { r, alpha, scale: settings.rsLora ? alpha / Math.sqrt(r) : alpha / r };
}

export interface AdapterTensor {
  name: string;
  dtype: Dtype;
  shape: readonly number[];
}

/** What one adapter module does to its base tensor `target` ([out, in], or [in, out] / [vocab, dim] when transposed). */
export interface LoraModule {
  module: string;
  target: string;
  /** Adapter tensors of A [r, in] (or [r, vocab]) and B [out, r] (or [dim, r]). */
  a: string;
  b: string;
  r: number;
  scale: number;
  /** τ = s·(B·A)ᵀ: fan_in_fan_out (Conv1D) or an embedding. */
  transposed: boolean;
  embedding: boolean;
  /** DoRA's magnitude vector [out]. */
  magnitude?: string;
}

export interface AdapterPlan {
  settings: LoraSettings;
  /** By base tensor name. */
  modules: Map<string, LoraModule>;
  /** Base tensor → the adapter tensor that replaces it (modules_to_save, trained biases, stored base layers). */
  replaced: Map<string, string>;
  /** Base bias tensor → lora_B.bias adding s·bias to it (lora_bias), with its module's s. */
  biases: Map<string, { tensor: string; scale: number }>;
}

const LORA_PART =
  /^(.*)\.(lora_A\.weight|lora_B\.weight|lora_B\.bias|lora_embedding_A|lora_embedding_B|lora_magnitude_vector(?:\.weight)?)$/;

/**
 * The plan of an adapter over a base: `tensors` are the adapter's, `baseShape` gives a base tensor's
 * shape (undefined where the base has none). Every adapter tensor is used, or an error names it.
 */
export function planAdapter(
  settings: LoraSettings,
  tensors: readonly AdapterTensor[],
  baseShape: (name: string) => readonly number[] | undefined,
  file: string,
): AdapterPlan {
  const parts = new Map<string, Map<string, AdapterTensor>>();
  const replaced = new Map<string, string>();
  for (const t of tensors) {
    const name = t.name.startsWith(PEFT_PREFIX) ? t.name.slice(PEFT_PREFIX.length) : t.name;
    const lora = LORA_PART.exec(name);
    if (lora) {
      const [, module = '', part = ''] = lora;
      if (!parts.has(module)) parts.set(module, new Map());
      parts.get(module)?.set(part.replace(/\.weight$/, '').replace('lora_magnitude_vector', 'm'), t);
      continue;
    }
    if (name.includes('.original_module.')) continue;
    const target = name.replace('.base_layer.', '.').replace('.modules_to_save.', '.');
    const shape = baseShape(target);
    if (!shape) throw new AdapterError(file, `replaces ${target}, which the base does not have`, t.name);
    if (shape.join(',') !== t.shape.join(','))
      throw new AdapterError(
        file,
        `has shape [${t.shape.join(', ')}] where the base's ${target} has [${shape.join(', ')}] ` +
          '(tokens added to the vocabulary?): resize the base to match, or merge without this adapter',
        t.name,
      );
    // A modules_to_save copy may be saved under both its plain and its wrapper name: the wrapper's wins.
    if (!replaced.has(target) || name.includes('.modules_to_save.')) replaced.set(target, t.name);
  }
  const modules = new Map<string, LoraModule>();
  const biases = new Map<string, { tensor: string; scale: number }>();
  for (const [module, part] of parts) {
    const embedding = part.has('lora_embedding_A') || part.has('lora_embedding_B');
    const a = part.get(embedding ? 'lora_embedding_A' : 'lora_A');
    const b = part.get(embedding ? 'lora_embedding_B' : 'lora_B');
    const any = a ?? b ?? [...part.values()][0];
    if (!a || !b)
      throw new AdapterError(
        file,
        `module ${module} has ${a ? 'lora_A' : 'lora_B'} but not the other`,
        any?.name,
      );
    const target = `${module}.weight`;
    const shape = baseShape(target);
    if (!shape) throw new AdapterError(file, `adapts ${target}, which the base does not have`, a.name);
    if (a.shape.length !== 2 || b.shape.length !== 2 || shape.length !== 2)
      throw new AdapterError(
        file,
        `adapts ${target} of shape [${shape.join(', ')}]: only LoRA of linear and embedding layers (2-D weights) ` +
          'can be merged as an agent, not of a convolution',
        a.name,
      );
    const { r, scale } = scalingOf(settings, module);
    const transposed = embedding || settings.fanInFanOut;
    const [inDim, outDim] = transposed ? [shape[0], shape[1]] : [shape[1], shape[0]];
    if (a.shape[0] !== r || b.shape[1] !== r || a.shape[1] !== inDim || b.shape[0] !== outDim)
      throw new AdapterError(
        file,
        `A [${a.shape.join(', ')}] and B [${b.shape.join(', ')}] do not fit ${target} [${shape.join(', ')}] ` +
          `at rank ${r} (r, rank_pattern${transposed ? ', and A as [r, in] of a transposed weight' : ''})`,
        a.name,
      );
    const magnitude = part.get('m');
    if (settings.dora && !magnitude)
      throw new AdapterError(
        file,
        `use_dora is set but module ${module} has no lora_magnitude_vector`,
        a.name,
      );
    if (magnitude && (embedding || settings.fanInFanOut))
      throw new AdapterError(
        file,
        `DoRA of ${embedding ? 'an embedding' : 'a fan_in_fan_out (Conv1D) layer'} is not supported as an agent ` +
          '(its norm runs across stored rows): merge it with PEFT',
        magnitude.name,
      );
    if (magnitude && (magnitude.shape.length !== 1 || magnitude.shape[0] !== outDim))
      throw new AdapterError(
        file,
        `DoRA magnitude of shape [${magnitude.shape.join(', ')}], not [${outDim}]`,
        magnitude.name,
      );
    const bias = part.get('lora_B.bias');
    if (bias) {
      const biasTarget = `${module}.bias`;
      const biasShape = baseShape(biasTarget);
      if (!biasShape || biasShape.join(',') !== String(outDim))
        throw new AdapterError(
          file,
          `lora_bias adds to ${biasTarget}, which the base does not have as [${outDim}]`,
          bias.name,
        );
      biases.set(biasTarget, { tensor: bias.name, scale });
    }
    modules.set(target, {
      module,
      target,
      a: a.name,
      b: b.name,
      r,
      scale,
      transposed,
      embedding,
      ...(magnitude ? { magnitude: magnitude.name } : {}),
    });
  }
  return { settings, modules, replaced, biases };
}

/**
 * What the adapter's base_model_name_or_path says about the loaded base: null where the names agree,
 * else a note (a 4-bit copy is named as such, not refused: its LoRA applies to the full weights).
 */
export function baseModelNote(
  adapterLabel: string,
  named: string | null,
  baseLabel: string,
  baseNames: string[],
): string | null {
  if (!named) return null;
  const short = (s: string) => s.replace(/\/+$/, '').split('/').pop()?.toLowerCase() ?? '';
  const quantised = /[-_.](?:bnb[-_]?4bit|4bit|8bit|gptq|awq|int4|int8|nf4)(?=$|[-_.])/i;
  const plain = short(named)
    .replace(quantised, '')
    .replace(/^unsloth-/, '');
  const known = [baseLabel, ...baseNames].map(short).filter(Boolean);
  const same = known.some((n) => n === short(named) || n === plain);
  if (quantised.test(short(named)))
    return (
      `${adapterLabel} was trained on ${named}, a quantised copy of ${plain}: its LoRA is applied to ` +
      `${baseLabel} as loaded${same ? '' : ' (check that it is that model)'}.`
    );
  if (same) return null;
  return `${adapterLabel} was trained on ${named}, but the base is ${baseLabel}: check that they are the same weights.`;
}

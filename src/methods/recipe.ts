// The merge recipe in mergekit's YAML, both ways: the studio and CLI write it next to every merged
// model (so the merge can be rerun at scale with mergekit) and the CLI's --config reads it.
import { parse, stringify } from 'yaml';
import type { FloatDtype } from '../format/dtype.ts';
import { defaultParams, isMethod } from './defaults.ts';
import type { MethodName, MethodParams } from './types.ts';

export interface Recipe {
  base: string;
  models: string[];
  params: MethodParams;
  /** Output dtype; undefined keeps each tensor's dtype from the base. */
  outDtype?: FloatDtype;
}

export class RecipeError extends Error {
  override name = 'RecipeError';
}

const YAML_DTYPES: Record<string, FloatDtype> = {
  bfloat16: 'BF16',
  bf16: 'BF16',
  float16: 'F16',
  fp16: 'F16',
  half: 'F16',
  float32: 'F32',
  fp32: 'F32',
  float: 'F32',
};

export function dtypeToYaml(dtype: FloatDtype): string {
  return dtype === 'BF16' ? 'bfloat16' : dtype === 'F16' ? 'float16' : 'float32';
}

/** Methods mergekit has under the same name; the others are this tool's own. */
const IN_MERGEKIT: ReadonlySet<MethodName> = new Set([
  'ram',
  'ramplus_tl',
  'linear',
  'task_arithmetic',
  'ties',
  'dare_linear',
  'dare_ties',
]);

const GLOBAL_PARAMETERS: Record<MethodName, (keyof MethodParams)[]> = {
  ram: ['epsilon'],
  ramplus: ['epsilon', 'r', 'alpha'],
  ramplus_soft: ['epsilon', 'r'],
  ramplus_tl: ['epsilon', 'r', 'alpha'],
  linear: ['normalize'],
  task_arithmetic: ['lambda', 'normalize'],
  ties: ['lambda', 'normalize'],
  dare_linear: ['lambda', 'normalize'],
  dare_ties: ['lambda', 'normalize'],
};

const PER_MODEL: Record<MethodName, ('weight' | 'density')[]> = {
  ram: [],
  ramplus: [],
  ramplus_soft: [],
  ramplus_tl: [],
  linear: ['weight'],
  task_arithmetic: ['weight'],
  ties: ['weight', 'density'],
  dare_linear: ['weight', 'density'],
  dare_ties: ['weight', 'density'],
};

export function toMergekitYaml(recipe: Recipe): string {
  const { params } = recipe;
  const perModel = PER_MODEL[params.method];
  const doc: Record<string, unknown> = {
    merge_method: params.method,
    base_model: recipe.base,
    models: recipe.models.map((model, t) => {
      const parameters: Record<string, number> = {};
      if (perModel.includes('weight')) parameters.weight = params.weights[t] ?? 1;
      if (perModel.includes('density')) parameters.density = params.density[t] ?? 1;
      return perModel.length ? { model, parameters } : { model };
    }),
    parameters: Object.fromEntries(GLOBAL_PARAMETERS[params.method].map((key) => [key, params[key]])),
    dtype: 'float32',
  };
  if (recipe.outDtype) doc.out_dtype = dtypeToYaml(recipe.outDtype);
  const notes = ['Written by merge-studio. Merged values are computed in float32.'];
  if (!IN_MERGEKIT.has(params.method))
    notes.push(`"${params.method}" is merge-studio's own method; mergekit's closest is "ramplus_tl".`);
  if (params.method.startsWith('dare'))
    notes.push(`DARE seed ${params.seed}: merge-studio's own counter-based RNG (mergekit draws its own).`);
  return `${notes.map((line) => `# ${line}`).join('\n')}\n${stringify(doc)}`;
}

function number(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new RecipeError(`${what} must be a number, got ${JSON.stringify(value)}`);
  return value;
}

function plainObject(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new RecipeError(`${what} must be a mapping (key: value), got ${JSON.stringify(value)}`);
  return value as Record<string, unknown>;
}

const SUPPORTED_TOP = new Set([
  'merge_method',
  'base_model',
  'models',
  'parameters',
  'dtype',
  'out_dtype',
  'random_seed',
]);
const SUPPORTED_GLOBAL = new Set([
  'epsilon',
  'r',
  'alpha',
  'lambda',
  'density',
  'weight',
  'normalize',
  'seed',
]);

/** Reads mergekit YAML for the methods this tool has; anything it cannot honour is an error, not a silent skip. */
export function parseMergekitYaml(text: string, file: string): Recipe {
  let doc: unknown;
  try {
    doc = parse(text, { uniqueKeys: true });
  } catch (error) {
    throw new RecipeError(`${file}: not valid YAML: ${(error as Error).message}`);
  }
  const top = plainObject(doc, file);
  for (const key of Object.keys(top))
    if (!SUPPORTED_TOP.has(key))
      throw new RecipeError(
        `${file}: "${key}" is not supported by merge-studio (supported: ${[...SUPPORTED_TOP].join(', ')}); ` +
          (key === 'slices' ? 'slices and layer ranges are mergekit-only.' : 'remove it or use mergekit.'),
      );
  const method = top.merge_method;
  if (typeof method !== 'string' || !isMethod(method))
    throw new RecipeError(
      `${file}: merge_method ${JSON.stringify(method)} is not one of merge-studio's methods`,
    );
  if (typeof top.base_model !== 'string' || !top.base_model)
    throw new RecipeError(`${file}: base_model (a path) is required for ${method}`);
  if (!Array.isArray(top.models) || top.models.length === 0)
    throw new RecipeError(`${file}: models must be a non-empty list`);

  const globals = plainObject(top.parameters, `${file}: parameters`);
  for (const [key, value] of Object.entries(globals)) {
    if (!SUPPORTED_GLOBAL.has(key)) throw new RecipeError(`${file}: parameter "${key}" is not supported`);
    if (typeof value === 'object' && value !== null)
      throw new RecipeError(`${file}: parameter "${key}": per-layer filters and gradients are mergekit-only`);
  }
  const models: string[] = [];
  const weights: number[] = [];
  const density: number[] = [];
  const defaults = defaultParams(method, top.models.length);
  top.models.forEach((entry: unknown, t: number) => {
    const item = typeof entry === 'string' ? { model: entry } : plainObject(entry, `${file}: models[${t}]`);
    if (typeof item.model !== 'string' || !item.model)
      throw new RecipeError(`${file}: models[${t}].model (a path) is required`);
    if (item.model === top.base_model)
      throw new RecipeError(`${file}: models[${t}] is the base model; list only the agents`);
    models.push(item.model);
    const parameters = plainObject(item.parameters, `${file}: models[${t}].parameters`);
    for (const key of Object.keys(parameters))
      if (key !== 'weight' && key !== 'density')
        throw new RecipeError(`${file}: models[${t}].parameters.${key} is not supported (weight, density)`);
    weights.push(
      number(parameters.weight ?? globals.weight ?? defaults.weights[t], `${file}: models[${t}] weight`),
    );
    density.push(
      number(parameters.density ?? globals.density ?? defaults.density[t], `${file}: models[${t}] density`),
    );
  });
  const normalize = globals.normalize ?? defaults.normalize;
  if (typeof normalize !== 'boolean') throw new RecipeError(`${file}: normalize must be true or false`);
  const params: MethodParams = {
    method,
    epsilon: number(globals.epsilon ?? defaults.epsilon, `${file}: epsilon`),
    r: number(globals.r ?? defaults.r, `${file}: r`),
    alpha: number(globals.alpha ?? defaults.alpha, `${file}: alpha`),
    lambda: number(globals.lambda ?? defaults.lambda, `${file}: lambda`),
    density,
    weights,
    normalize,
    seed: number(globals.seed ?? top.random_seed ?? defaults.seed, `${file}: seed`),
  };
  const outName = top.out_dtype ?? top.dtype;
  let outDtype: FloatDtype | undefined;
  if (outName !== undefined) {
    outDtype = typeof outName === 'string' ? YAML_DTYPES[outName] : undefined;
    if (!outDtype)
      throw new RecipeError(`${file}: dtype ${JSON.stringify(outName)} is not bfloat16, float16 or float32`);
  }
  return { base: top.base_model, models, params, outDtype };
}

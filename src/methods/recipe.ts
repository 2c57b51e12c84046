// The merge recipe in mergekit's YAML, both ways: the studio and CLI write it next to every merged
// model (so the merge can be rerun with mergekit) and the CLI's --config reads it with mergekit's
// semantics: its defaults, its per-layer gradients and filters, its multi-document (mergekit-multi) form.
import { parseAllDocuments, stringify } from 'yaml';
import type { FloatDtype } from '../format/dtype.ts';
import {
  agentValue,
  isMethod,
  mergekitDefaults,
  mergekitGlobals,
  paramsRecord,
  readsParam,
  recipeGlobals,
  recipeModelKeys,
  recipePerModel,
  setAgentValue,
  specForYaml,
  yamlKeyOf,
} from './defaults.ts';
import { methodOf } from './registry/index.ts';
import { SPARSIFIERS } from './sparsifiers.ts';
import { TIES_TIE_RULE } from './registry/ties.ts';
import { rangeProblem, specOf, type ParamScalar, type ParamSpec } from './params.ts';
import type { MethodParams } from './types.ts';

/** A value, a gradient over the layers, or a list of values for tensors whose name contains `filter`. */
export type Scalar = number | boolean | string;
export interface Conditional {
  filter?: string;
  value: Scalar | number[];
}
export type Setting = Scalar | number[] | Conditional[];

/** The recipe's own parameter settings, resolved per tensor (src/methods/resolve.ts). */
export interface RecipeSettings {
  global: Record<string, Setting>;
  models: Record<string, Setting>[];
}

export interface Recipe {
  /** A stage's name in a multi-document recipe; the final model's stage has none. */
  name?: string;
  /** Path (or label) of the base; empty for a linear merge without one (mergekit's form). */
  base: string;
  models: string[];
  /** Every parameter, defaults filled in; where `settings` vary per tensor, the resolver decides. */
  params: MethodParams;
  settings?: RecipeSettings;
  /**
   * mergekit's `dtype`, which casts the inputs on load: merge-studio's read precision D (SPEC.md
   * "Inputs stored in other precisions"); it computes in f32 whatever D is. Written as float32 where
   * undefined; null leaves it out: the default D, the base's dtype per tensor, which no one dtype says.
   */
  mathDtype?: FloatDtype | null;
  /** Output dtype; undefined keeps each tensor's dtype from the base. */
  outDtype?: FloatDtype;
  /** One line each: what was accepted without effect, or what differs from mergekit. */
  notes?: string[];
  /** The inputs are display labels (the studio), not paths mergekit can open. */
  labels?: boolean;
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

/** A path or value short enough for a message: the start and the end of anything long. */
export function shorten(text: string, max = 96): string {
  if (text.length <= max) return text;
  const head = Math.floor((max - 1) / 3);
  return `${text.slice(0, head)}…${text.slice(text.length - (max - 1 - head))}`;
}

function show(value: unknown): string {
  let text: string;
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return shorten(text, 80);
}

export { TIES_TIE_RULE };

export function toMergekitYaml(recipe: Recipe): string {
  const { params } = recipe;
  const descriptor = methodOf(params.method);
  const perModel = recipePerModel(params.method).filter((key) => specOf(key).mergekit?.write !== false);
  const settings = recipe.settings;
  const linear = params.method === 'linear';
  const doc: Record<string, unknown> = { merge_method: params.method };
  // mergekit adds a linear recipe's base_model to its inputs and then needs a weight for it: the
  // linear form names the merged models only.
  if (!linear && recipe.base) doc.base_model = recipe.base;
  doc.models = recipe.models.map((model, t) => {
    const parameters: Record<string, unknown> = {};
    for (const key of perModel) {
      const name = yamlKeyOf(key);
      parameters[name] = settings?.models[t]?.[name] ?? settings?.global[name] ?? agentValue(params, key, t);
    }
    return perModel.length ? { model, parameters } : { model };
  });
  doc.parameters = Object.fromEntries(
    mergekitGlobals(params.method).map((key) => {
      const name = yamlKeyOf(key);
      const value = paramsRecord(params)[key] as ParamScalar | undefined;
      const toYaml = specOf(key).mergekit?.toYaml;
      return [name, toYaml ? toYaml(value) : (settings?.global[name] ?? value)];
    }),
  );
  if (recipe.mathDtype !== null) doc.dtype = dtypeToYaml(recipe.mathDtype ?? 'F32');
  if (recipe.outDtype) doc.out_dtype = dtypeToYaml(recipe.outDtype);
  const notes = [
    recipe.mathDtype && recipe.mathDtype !== 'F32'
      ? `Written by merge-studio, which read the inputs at ${doc.dtype} (dtype) and computes in float32 (GPU) or float64 (CPU).`
      : recipe.mathDtype === null
        ? 'Written by merge-studio, which read each input tensor at the base’s dtype (no one dtype says it, so none is written) and computes in float32 (GPU) or float64 (CPU).'
        : 'Written by merge-studio, which computes in float32 (GPU) or float64 (CPU): dtype float32.',
  ];
  if (recipe.labels)
    notes.push(
      'The model names are the studio’s labels (file or folder names): replace each with its local path ' +
        'or Hub id before running mergekit.',
    );
  if (!descriptor.mergekit.name)
    notes.push(
      `"${params.method}" is merge-studio's own method; mergekit's closest is "${descriptor.mergekit.closest}".`,
    );
  const { sparsify } = descriptor.plan;
  if (sparsify) notes.push(...(SPARSIFIERS[sparsify].recipeNotes?.(params) ?? []));
  if (descriptor.tieRule) notes.push(descriptor.tieRule);
  return `${notes.map((line) => `# ${line}`).join('\n')}\n${stringify(doc)}`;
}

/** Refuses a YAML alias cycle (`&a [*a]`), which would otherwise surface as a JSON or stack error. */
function assertAcyclic(value: unknown, file: string, ancestors = new Set<unknown>()): void {
  if (typeof value !== 'object' || value === null) return;
  if (ancestors.has(value))
    throw new RecipeError(`${file}: a YAML alias refers to a node that contains it (an alias cycle)`);
  ancestors.add(value);
  for (const child of Object.values(value)) assertAcyclic(child, file, ancestors);
  ancestors.delete(value);
}

function plainObject(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new RecipeError(`${what} must be a mapping (key: value), got ${show(value)}`);
  return value as Record<string, unknown>;
}

const SUPPORTED_TOP = new Set([
  'name',
  'merge_method',
  'base_model',
  'models',
  'parameters',
  'dtype',
  'out_dtype',
  'random_seed',
  'tokenizer_source',
]);
/** mergekit run options that can stand in a recipe and never change the merged numbers. */
const NO_EFFECT_TOP = new Set([
  'lazy_unpickle',
  'lazy_loader',
  'low_cpu_memory',
  'cuda',
  'device',
  'read_to_gpu',
  'multi_gpu',
  'copy_tokenizer',
  'out_shard_size',
  'safe_serialization',
]);
/** mergekit options under `parameters:` that never change the merged numbers. */
const NO_EFFECT_GLOBAL = new Set(['int8_mask']);

/** Checks one setting's form and its spec's range; `where` names the recipe, the model and the field. */
function checkSetting(spec: ParamSpec, raw: unknown, where: string): Setting {
  const numeric = spec.kind === 'number' || spec.kind === 'integer';
  const checkNumber = (value: unknown, at = ''): number => {
    if (typeof value !== 'number')
      throw new RecipeError(`${where}${at}: expected a number, got ${show(value)}`);
    const problem = rangeProblem(spec, value);
    if (problem) throw new RecipeError(`${where}${at}: ${value} ${problem}`);
    return value;
  };
  const checkValue = (value: unknown, at = ''): Scalar | number[] => {
    if (Array.isArray(value)) {
      if (!numeric || value.length === 0)
        throw new RecipeError(`${where}${at}: a gradient must be a non-empty list of numbers`);
      return value.map((v, i) => checkNumber(v, `${at}[${i}]`));
    }
    if (numeric) return checkNumber(value, at);
    if (typeof value === 'boolean' || typeof value === 'string') return value;
    throw new RecipeError(`${where}${at}: expected true or false, got ${show(value)}`);
  };
  if (Array.isArray(raw) && raw.some((v) => typeof v === 'object' && v !== null)) {
    return raw.map((entry: unknown, i) => {
      const item = plainObject(entry, `${where}[${i}]`);
      for (const k of Object.keys(item))
        if (k !== 'filter' && k !== 'value')
          throw new RecipeError(`${where}[${i}]: "${shorten(k, 40)}" is not filter or value`);
      if (item.filter !== undefined && typeof item.filter !== 'string')
        throw new RecipeError(`${where}[${i}].filter must be text, got ${show(item.filter)}`);
      if (!('value' in item)) throw new RecipeError(`${where}[${i}] needs a value`);
      const value = checkValue(item.value, `[${i}].value`);
      return item.filter === undefined ? { value } : { filter: item.filter, value };
    });
  }
  return checkValue(raw);
}

/**
 * The value of a global setting that is not resolved per tensor (a boolean, an enum, an integer), or
 * an error naming the recipe and the field.
 */
function singleValue(spec: ParamSpec, value: unknown, name: string, at: string): ParamScalar {
  const codec = spec.mergekit?.fromYaml;
  if (codec) {
    const decoded = typeof value === 'object' ? undefined : codec(value as ParamScalar);
    if (decoded === undefined)
      throw new RecipeError(
        `${at}: parameters.${name}: expected ${spec.mergekit?.forms}, got ${show(value)}`,
      );
    return decoded;
  }
  if (spec.kind === 'boolean') {
    if (typeof value !== 'boolean')
      throw new RecipeError(`${at}: parameters.${name} must be true or false, got ${show(value)}`);
    return value;
  }
  const problem =
    typeof value === 'number' ? rangeProblem(spec, value) : (rangeProblem(spec, 0.5) ?? 'must be one number');
  if (problem) throw new RecipeError(`${at}: ${name} ${show(value)} ${problem}`);
  return value as number;
}

function dtypeOf(value: unknown, where: string): FloatDtype {
  const dtype = typeof value === 'string' ? YAML_DTYPES[value] : undefined;
  if (!dtype) throw new RecipeError(`${where} ${show(value)} is not bfloat16, float16 or float32`);
  return dtype;
}

/** Reads one recipe document (mergekit YAML) for the methods this tool has, with mergekit's semantics. */
function readRecipe(doc: unknown, file: string): Recipe {
  const top = plainObject(doc, file);
  const notes: string[] = [];
  for (const key of Object.keys(top)) {
    if (SUPPORTED_TOP.has(key)) continue;
    if (NO_EFFECT_TOP.has(key)) {
      notes.push(`${key}: a mergekit run option with no effect on the merged values; not used.`);
      continue;
    }
    throw new RecipeError(
      `${file}: "${shorten(key, 40)}" is not supported by merge-studio (supported: ${[...SUPPORTED_TOP].join(', ')}); ` +
        (key === 'slices' || key === 'modules'
          ? 'slices, layer ranges and modules are mergekit-only.'
          : 'remove it or use mergekit.'),
    );
  }
  const name = top.name;
  if (name !== undefined && (typeof name !== 'string' || !name))
    throw new RecipeError(`${file}: name must be text, got ${show(name)}`);
  const at = name ? `${file} (stage ${shorten(name, 40)})` : file;
  const method = top.merge_method;
  if (typeof method !== 'string' || !isMethod(method))
    throw new RecipeError(`${at}: merge_method ${show(method)} is not one of merge-studio's methods`);
  const linear = method === 'linear';
  const baseModel = top.base_model;
  if (baseModel !== undefined && (typeof baseModel !== 'string' || !baseModel))
    throw new RecipeError(`${at}: base_model must be a path, got ${show(baseModel)}`);
  if (!linear && !baseModel) throw new RecipeError(`${at}: base_model (a path) is required for ${method}`);
  if (!Array.isArray(top.models) || top.models.length === 0)
    throw new RecipeError(`${at}: models must be a non-empty list`);
  if (top.tokenizer_source !== undefined && top.tokenizer_source !== 'base')
    throw new RecipeError(
      `${at}: tokenizer_source ${show(top.tokenizer_source)} is not supported: merge-studio copies the base's tokenizer (tokenizer_source: base)`,
    );

  const globalsRaw = plainObject(top.parameters, `${at}: parameters`);
  const global: Record<string, Setting> = {};
  for (const [key, value] of Object.entries(globalsRaw)) {
    // A key outside mergekit's base schema is refused by the methods that do not read it.
    const param = NO_EFFECT_GLOBAL.has(key) ? undefined : specForYaml(method, key);
    if (!param && !NO_EFFECT_GLOBAL.has(key))
      throw new RecipeError(`${at}: parameter "${shorten(key, 40)}" is not supported`);
    if (value === null || value === undefined) continue;
    if (!param) {
      notes.push('int8_mask: how mergekit stores its sign masks; no effect on the merged values.');
      continue;
    }
    global[key] = checkSetting(specOf(param), value, `${at}: parameters.${key}`);
  }

  const entries: { model: string; parameters: Record<string, unknown>; t: number }[] = [];
  top.models.forEach((entry: unknown, t: number) => {
    const item = typeof entry === 'string' ? { model: entry } : plainObject(entry, `${at}: models[${t}]`);
    if (typeof item.model !== 'string' || !item.model)
      throw new RecipeError(`${at}: models[${t}].model (a path) is required`);
    const parameters = plainObject(
      item.parameters,
      `${at}: models[${t}] (${shorten(item.model)}) parameters`,
    );
    entries.push({ model: item.model, parameters, t });
  });
  // mergekit skips the base among a task-vector method's models; linear merges it like any model.
  const kept = entries.filter((e) => linear || e.model !== baseModel);
  if (kept.length < entries.length)
    notes.push('base_model is also listed under models; it has no task vector and is not merged again.');
  if (kept.length === 0) throw new RecipeError(`${at}: models lists only the base model`);
  if (methodOf(method).plan.combine === 'slerp' && kept.length !== 1)
    throw new RecipeError(
      `${at}: merge_method "slerp" interpolates base_model and exactly one other model (mergekit: ` +
        `"Slerp merge expects exactly two models"); models lists ${kept.length} besides the base`,
    );
  if (linear && baseModel && !kept.some((e) => e.model === baseModel))
    throw new RecipeError(
      `${at}: linear merges the listed models only; mergekit adds base_model to them and needs a weight ` +
        `for it: list ${shorten(baseModel)} under models with a weight, or drop base_model`,
    );

  const defaults = mergekitDefaults(method, kept.length);
  const perModel = recipePerModel(method);
  const modelKeys = recipeModelKeys(method);
  const models: RecipeSettings['models'] = [];
  kept.forEach(({ model, parameters, t }, m) => {
    const where = `${at}: models[${t}] (${shorten(model)})`;
    const own: Record<string, Setting> = {};
    for (const [key, value] of Object.entries(parameters)) {
      const param = modelKeys.includes(key) ? specForYaml(method, key, 'agent') : undefined;
      if (!param)
        throw new RecipeError(
          `${where}: parameter "${shorten(key, 40)}" is not supported (${modelKeys.join(', ')})`,
        );
      if (!readsParam(method, param)) {
        notes.push(
          `models[${t}] ${key}: ${method} has no per-model ${key}; not used (mergekit ignores it too).`,
        );
        continue;
      }
      own[key] = checkSetting(specOf(param), value, `${where} ${key}`);
    }
    for (const param of perModel) {
      const key = yamlKeyOf(param);
      const spec = specOf(param);
      if (spec.mergekit?.required && own[key] === undefined && global[key] === undefined)
        throw new RecipeError(
          `${where}: ${key} is required for ${method} (mergekit refuses a model without one); ` +
            `add parameters: ${key}: ${Number(spec.default).toFixed(1)}`,
        );
      // A plain number is the value everywhere; the resolver re-reads lists and filters per tensor.
      const value = own[key] ?? global[key];
      if (typeof value === 'number') setAgentValue(defaults, param, m, value);
    }
    models.push(own);
  });
  const record = paramsRecord(defaults);
  for (const param of recipeGlobals(method)) {
    const spec = specOf(param);
    const key = yamlKeyOf(param);
    const topLevel = spec.mergekit?.topLevel;
    const value = global[key] ?? (topLevel === undefined ? undefined : top[topLevel]);
    if (value === undefined) continue;
    if (!readsParam(method, param)) notes.push(`${key}: ${method} does not read it; not used.`);
    // A number is the value everywhere; a gradient or filter is resolved per tensor (resolve.ts).
    if (spec.perTensor && (spec.kind === 'number' || spec.kind === 'integer')) {
      if (typeof value === 'number') record[param] = value;
    } else record[param] = singleValue(spec, value, key, at);
  }

  const mathDtype = top.dtype === undefined ? undefined : dtypeOf(top.dtype, `${at}: dtype`);
  const outDtype = top.out_dtype === undefined ? mathDtype : dtypeOf(top.out_dtype, `${at}: out_dtype`);
  if (mathDtype && mathDtype !== 'F32')
    notes.push(
      `dtype ${dtypeToYaml(mathDtype)}: mergekit computes every step in ${dtypeToYaml(mathDtype)}; ` +
        `merge-studio computes in float32 and rounds once to the output dtype ${dtypeToYaml(outDtype!)}.`,
    );
  if (!mathDtype)
    notes.push(
      'no dtype: mergekit computes in each tensor’s stored dtype; merge-studio computes in float32.',
    );
  return {
    ...(name ? { name } : {}),
    base: baseModel ?? '',
    models: kept.map((e) => e.model),
    params: defaults,
    settings: { global, models },
    mathDtype,
    outDtype,
    notes,
  };
}

/** Every document of a recipe file, in order: one for a plain recipe, several for mergekit-multi. */
export function parseMergekitRecipes(text: string, file: string): Recipe[] {
  const short = shorten(file);
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  if (!Array.isArray(docs)) throw new RecipeError(`${short}: the file holds no YAML document`);
  const recipes: Recipe[] = [];
  docs.forEach((doc, i) => {
    const where = docs.length > 1 ? `${short} (document ${i + 1})` : short;
    const error = doc.errors[0];
    if (error) throw new RecipeError(`${where}: not valid YAML: ${shorten(error.message, 300)}`);
    let value: unknown;
    try {
      value = doc.toJS();
    } catch (e) {
      throw new RecipeError(`${where}: ${shorten((e as Error).message, 300)}`);
    }
    assertAcyclic(value, where);
    if (value === null || value === undefined) return;
    recipes.push(readRecipe(value, where));
  });
  if (recipes.length === 0) throw new RecipeError(`${short}: the file holds no recipe`);
  if (recipes.length > 1) {
    const names = new Set<string>();
    recipes.forEach((recipe, i) => {
      if (!recipe.name && i !== recipes.length - 1)
        throw new RecipeError(
          `${short}: document ${i + 1} has no name; in a multi-document recipe every stage but the last ` +
            '(the final model, written to --out) needs a name that later stages use as a model path',
        );
      if (recipe.name && names.has(recipe.name))
        throw new RecipeError(`${short}: two stages are named ${show(recipe.name)}`);
      if (recipe.name) names.add(recipe.name);
    });
  }
  return recipes;
}

/** Reads a single-document recipe (the studio's YAML import). */
export function parseMergekitYaml(text: string, file: string): Recipe {
  const recipes = parseMergekitRecipes(text, file);
  if (recipes.length > 1)
    throw new RecipeError(
      `${shorten(file)}: ${recipes.length} documents; a multi-document recipe runs from the command line ` +
        '(merge-studio merge --config), one stage after another',
    );
  return recipes[0]!;
}

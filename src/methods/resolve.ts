// The parameters of each tensor: a recipe's gradients (a list per parameter, interpolated over the
// layers) and filters (values for tensors whose name contains a text) resolved as mergekit resolves
// them (`config.py` evaluate_setting, `plan.py` layer positions).
import { RecipeError, shorten, type Recipe, type Scalar, type Setting } from './recipe.ts';
import {
  copyParams,
  paramsRecord,
  recipeGlobals,
  recipePerModel,
  setAgentValue,
  yamlKeyOf,
} from './defaults.ts';
import { specOf } from './params.ts';
import type { MethodParams } from './types.ts';

const NUMBERED = /(?:^|\.)(?:layers|layer|h|blocks|block)\.(\d+)\./;

/** `model.layers.7.mlp.up_proj.weight` → 7; undefined for tensors outside the numbered layers. */
export function layerIndex(name: string): number | undefined {
  const match = NUMBERED.exec(name);
  return match ? Number(match[1]) : undefined;
}

export function layerCount(names: Iterable<string>): number {
  let count = 0;
  for (const name of names) count = Math.max(count, (layerIndex(name) ?? -1) + 1);
  return count;
}

/**
 * mergekit's gradient position t of a tensor: layer i of L is i/(L−1) (1 when L = 1); every weight
 * outside the numbered layers, before them (embeddings) or after them (final norm, head), at 0. Since
 * mergekit's module planner (PR #534, 2025) the weights after the layers read the module's config at
 * t = 0 as the ones before do; before it they were at 1.
 */
export function layerPosition(name: string, layers: number): number {
  const index = layerIndex(name);
  if (index !== undefined) return layers > 1 ? index / (layers - 1) : 1;
  return 0;
}

/** mergekit's evaluate_setting: a value, a gradient at t, or the first filter that matches the name. */
export function evaluateSetting(setting: Setting | undefined, name: string, t: number): Scalar | undefined {
  if (setting === undefined || !Array.isArray(setting)) return setting;
  if (setting.every((e) => typeof e === 'number')) {
    const values = setting as number[];
    const scaled = t * (values.length - 1);
    const i0 = Math.trunc(scaled);
    const i1 = Math.min(values.length - 1, i0 + 1);
    const frac = scaled - i0;
    return (1 - frac) * values[i0]! + frac * values[i1]!;
  }
  for (const condition of setting) {
    if (typeof condition !== 'object') continue;
    const { filter } = condition;
    if (filter === undefined || filter === '*' || (name && name.includes(filter)))
      return evaluateSetting(condition.value, name, t);
  }
  return undefined;
}

function asNumber(value: Scalar, where: string): number {
  if (typeof value !== 'number') throw new RecipeError(`${where}: expected a number, got ${String(value)}`);
  return value;
}

/** One tensor's parameters under a recipe: the model's setting, else the global one, else the default. */
export function tensorParamsOf(recipe: Recipe, name: string, t: number, file: string): MethodParams {
  const { params, settings } = recipe;
  const p = copyParams(params);
  if (!settings) return p;
  const { global } = settings;
  // The global numbers a gradient or filter may set (λ, ε, r, α), whether or not the method reads them.
  for (const param of recipeGlobals(params.method)) {
    if (!specOf(param).perTensor) continue;
    const key = yamlKeyOf(param);
    const value = evaluateSetting(global[key], name, t);
    if (value !== undefined) paramsRecord(p)[param] = asNumber(value, `${file}: ${name}: ${key}`);
  }
  const perModel = recipePerModel(params.method).filter((param) => specOf(param).perTensor);
  settings.models.forEach((own, m) => {
    for (const param of perModel) {
      const key = yamlKeyOf(param);
      const where = `${file}: ${shorten(recipe.models[m] ?? '')}: ${name}: ${key}`;
      const value = evaluateSetting(own[key], name, t) ?? evaluateSetting(global[key], name, t);
      if (value === undefined) {
        // mergekit: "Missing required parameter weight for <model>.<tensor>".
        if (specOf(param).mergekit?.required)
          throw new RecipeError(
            `${where} is required, and no value or filter of the recipe applies to this tensor`,
          );
        continue;
      }
      setAgentValue(p, param, m, asNumber(value, where));
    }
  });
  return p;
}

/**
 * Every tensor's parameters, resolved before any heavy work so a filter that leaves a tensor without a
 * required weight fails at once. Undefined when the recipe has no per-tensor settings at all.
 */
export function recipeResolver(
  recipe: Recipe,
  names: readonly string[],
  file: string,
): ((name: string) => MethodParams) | undefined {
  if (!recipe.settings) return undefined;
  const layers = layerCount(names);
  const resolved = new Map(
    names.map((name) => [name, tensorParamsOf(recipe, name, layerPosition(name, layers), file)]),
  );
  return (name) => resolved.get(name) ?? recipe.params;
}

/** The parameters the engine gets for one tensor (the engine adds DARE's per-tensor rescale factors). */
export function paramsForTensor(
  params: MethodParams,
  perTensor: ((name: string) => MethodParams) | undefined,
  name: string,
): MethodParams {
  return perTensor?.(name) ?? params;
}

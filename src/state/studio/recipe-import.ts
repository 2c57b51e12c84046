// A recipe read into the studio as the CLI reads it: which recipe model becomes which loaded agent
// (by name where a loaded label is the recipe path's last part, else by position), its gradients and
// filters kept beside the scalar parameters, and a line for everything the studio cannot honour.
import { agentValue, copyParams, paramsRecord, recipePerModel, yamlKeyOf } from '../../methods/defaults.ts';
import type { RecipeSettings, Setting } from '../../methods/recipe.ts';
import type { MethodParams } from '../../methods/types.ts';

/** One recipe model and the loaded agent it was given to (null: none loaded for it). */
export interface ModelMapping {
  recipe: string;
  loaded: string | null;
  by: 'name' | 'position' | null;
}

/** `org/Some-Model`, `/models/Some-Model/`, `some-model.safetensors` → `some-model`: what a label can match. */
export function recipeModelName(path: string): string {
  const last =
    path
      .replace(/[/\\]+$/, '')
      .split(/[/\\]/)
      .pop() ?? path;
  return last.replace(/\.safetensors$/i, '').toLowerCase();
}

/**
 * Which loaded agent each recipe model becomes: first every loaded label equal to a recipe model's
 * name (recipeModelName), then the rest in order. `order[t]` is the recipe index of loaded agent t,
 * -1 where no recipe model is left for it.
 */
export function mapRecipeModels(
  recipeModels: readonly string[],
  loaded: readonly string[],
): { rows: ModelMapping[]; order: number[] } {
  const order = loaded.map(() => -1);
  const taken = new Set<number>();
  loaded.forEach((label, t) => {
    const name = recipeModelName(label);
    const i = recipeModels.findIndex((m, j) => !taken.has(j) && recipeModelName(m) === name);
    if (i >= 0) {
      order[t] = i;
      taken.add(i);
    }
  });
  const byName = new Set(taken);
  const rest = recipeModels.map((_, i) => i).filter((i) => !taken.has(i));
  order.forEach((i, t) => {
    const next = i < 0 ? rest.shift() : undefined;
    if (next !== undefined) order[t] = next;
  });
  const rows = recipeModels.map((recipe, i): ModelMapping => {
    const t = order.indexOf(i);
    if (t < 0) return { recipe, loaded: null, by: null };
    return { recipe, loaded: loaded[t] ?? null, by: byName.has(i) ? 'name' : 'position' };
  });
  return { rows, order };
}

const isScalar = (setting: Setting | undefined): boolean => setting === undefined || !Array.isArray(setting);

/** Only the settings a scalar cannot say (gradients and filters): the scalars live in the params. */
export function gradientsOf(settings: RecipeSettings): RecipeSettings {
  const keep = (own: Record<string, Setting>): Record<string, Setting> =>
    Object.fromEntries(Object.entries(own).filter(([, v]) => !isScalar(v)));
  return { global: keep(settings.global), models: settings.models.map(keep) };
}

/**
 * A recipe's params and gradients in the loaded agents' order (`order` of mapRecipeModels); an agent
 * without a recipe model gets the recipe's defaults (its value in `fallback`).
 */
export function reorderRecipe(
  params: MethodParams,
  gradients: RecipeSettings,
  order: readonly number[],
  fallback: MethodParams,
): { params: MethodParams; gradients: RecipeSettings } {
  const next = copyParams(params);
  const record = paramsRecord(next);
  for (const [key, value] of Object.entries(paramsRecord(params))) {
    if (!Array.isArray(value)) continue;
    const defaults = paramsRecord(fallback)[key] as number[] | undefined;
    record[key] = order.map((i, t) => (i >= 0 ? value[i] : undefined) ?? defaults?.[t] ?? 1);
  }
  return {
    params: next,
    gradients: {
      global: gradients.global,
      models: order.map((i) => (i >= 0 ? gradients.models[i] : undefined) ?? {}),
    },
  };
}

/**
 * The recipe settings a merge and its exported YAML get: each agent's gradient or filter where it has
 * one, the global one where only that is set (mergekit: a model's own setting wins), else the scalar
 * the studio shows. The CLI's resolver (src/methods/resolve.ts) reads them per tensor.
 */
export function mergeSettings(
  params: MethodParams,
  gradients: RecipeSettings | null,
  agents: number,
): RecipeSettings | undefined {
  if (!gradients || !hasGradients(gradients)) return undefined;
  const models = Array.from({ length: agents }, (_, t) => {
    const own: Record<string, Setting> = {};
    for (const key of recipePerModel(params.method)) {
      const name = yamlKeyOf(key);
      const setting = gradients.models[t]?.[name];
      if (setting !== undefined) own[name] = setting;
      else if (gradients.global[name] === undefined) own[name] = agentValue(params, key, t);
    }
    return own;
  });
  return { global: { ...gradients.global }, models };
}

export function hasGradients(gradients: RecipeSettings | null): boolean {
  return (
    gradients !== null &&
    (Object.keys(gradients.global).length > 0 || gradients.models.some((m) => Object.keys(m).length > 0))
  );
}

/** A gradient or filter list as the studio shows it: `[1, 0.7, 0.1]`, `mlp: 0.5; otherwise 0`. */
export function settingText(setting: Setting): string {
  if (!Array.isArray(setting)) return String(setting);
  if (setting.every((v) => typeof v === 'number')) return `[${(setting as number[]).join(', ')}]`;
  return (setting as Exclude<Setting, number[] | string | number | boolean>)
    .map((c) =>
      c.filter === undefined || c.filter === '*'
        ? `otherwise ${settingText(c.value)}`
        : `“${c.filter}”: ${settingText(c.value)}`,
    )
    .join('; ');
}

/** "per layer, interpolated" for a gradient, "by tensor name" for a filter list. */
export function settingNote(setting: Setting): string {
  if (!Array.isArray(setting)) return '';
  if (setting.every((v) => typeof v === 'number')) return 'per layer, interpolated';
  return 'by tensor name (first match)';
}

/**
 * What the studio does not do as the recipe says, one line each: the parser's notes (options without
 * effect, mergekit's own dtype), recipe models without a loaded agent, loaded agents the recipe does
 * not name, and a base of another name.
 */
export function unhonoured(input: {
  notes: readonly string[];
  rows: readonly ModelMapping[];
  loaded: readonly string[];
  order: readonly number[];
  recipeBase: string;
  loadedBase: string | null;
}): string[] {
  const lines = [...input.notes];
  if (input.loaded.length > 0)
    for (const row of input.rows)
      if (row.loaded === null)
        lines.push(`${row.recipe}: no loaded agent is left for it, so its parameters are not used.`);
  input.order.forEach((i, t) => {
    if (i < 0)
      lines.push(`${input.loaded[t]}: the recipe does not name it; it merges with the method's defaults.`);
  });
  if (
    input.recipeBase &&
    input.loadedBase !== null &&
    recipeModelName(input.recipeBase) !== recipeModelName(input.loadedBase)
  )
    lines.push(`base_model ${input.recipeBase}: the loaded base ${input.loadedBase} is used in its place.`);
  return lines;
}

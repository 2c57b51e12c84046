// The recipe part of the studio: method, parameters (each per-agent list generic over the parameter
// specs, src/methods/params.ts), output dtype, and recipes offered from a session, a link or YAML.
import type { StateCreator } from 'zustand';
import { at } from '../../io/checked.ts';
import { defaultParams, paramsRecord, yamlKeyOf } from '../../methods/defaults.ts';
import { specOf, USER_PARAMS } from '../../methods/params.ts';
import type { RecipeSettings, Setting } from '../../methods/recipe.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import type { StudioContext } from './context.ts';
import type { RecipeActions, StudioSlice } from './types.ts';
import { hasGradients, mapRecipeModels, reorderRecipe, unhonoured } from './recipe-import.ts';

/** The per-agent parameters (a list each, one value per agent, in merge order). */
const AGENT_PARAMS = USER_PARAMS.filter((key) => specOf(key).scope === 'agent');

/**
 * Params resized to N agents: each per-agent list the method's defaults have keeps what was set and
 * fills with the defaults.
 */
export function fitParams(params: MethodParams, agents: number): MethodParams {
  const defaults = paramsRecord(defaultParams(params.method, agents));
  const next = { ...params };
  const record = paramsRecord(next);
  for (const key of AGENT_PARAMS) {
    const fill = defaults[key] as number[] | undefined;
    const values = (record[key] as number[] | undefined) ?? [];
    if (fill) record[key] = fill.map((d, t) => values[t] ?? d);
  }
  return next;
}

/** Params with every per-agent list's entries i and j exchanged, as their agents were. */
export function swapAgents(params: MethodParams, i: number, j: number): MethodParams {
  const next = { ...params };
  const record = paramsRecord(next);
  for (const key of AGENT_PARAMS) {
    const values = record[key] as number[] | undefined;
    if (values) record[key] = swapped(values, i, j);
  }
  return next;
}

/** The new method's defaults, with the parameters kept across a change of method (ε, the weights). */
function switchMethod(current: MethodParams, method: MethodName, agents: number): MethodParams {
  const next = defaultParams(method, agents);
  const kept = paramsRecord(fitParams(current, agents));
  const record = paramsRecord(next);
  for (const key of USER_PARAMS)
    if (specOf(key).keepOnMethodChange && kept[key] !== undefined) record[key] = kept[key];
  return next;
}

/** Gradients with agents i and j exchanged, as their agents were. */
export function swapGradients(gradients: RecipeSettings | null, i: number, j: number): RecipeSettings | null {
  if (!gradients) return null;
  const models = [...gradients.models];
  while (models.length <= Math.max(i, j)) models.push({});
  return { global: gradients.global, models: swapped(models, i, j) };
}

/** Only the gradients of the mergekit keys `keep` allows; null where none is left. */
function keepGradients(
  gradients: RecipeSettings | null,
  keep: (key: string) => boolean,
): RecipeSettings | null {
  if (!gradients) return null;
  const only = (own: Record<string, Setting>): Record<string, Setting> =>
    Object.fromEntries(Object.entries(own).filter(([key]) => keep(key)));
  const next = { global: only(gradients.global), models: gradients.models.map(only) };
  return hasGradients(next) ? next : null;
}

/** The mergekit keys of the parameters kept across a change of method (their gradients stay too). */
const KEPT_KEYS = new Set(USER_PARAMS.filter((k) => specOf(k).keepOnMethodChange).map(yamlKeyOf));

/** A copy of `items` with the entries at i and j (both inside it) exchanged. */
export function swapped<T>(items: readonly T[], i: number, j: number): T[] {
  const next = [...items];
  next[i] = at(items, j, 'swapped entries');
  next[j] = at(items, i, 'swapped entries');
  return next;
}

export function createRecipeSlice(ctx: StudioContext): StateCreator<StudioSlice, [], [], RecipeActions> {
  return (_set, get) => {
    const { patch, agentCount } = ctx;
    return {
      setMethod(method) {
        // ε and the per-agent weights carry over (keepOnMethodChange); the rest takes the method's defaults.
        patch({
          params: switchMethod(get().studio.params, method, agentCount()),
          gradients: keepGradients(get().studio.gradients, (key) => KEPT_KEYS.has(key)),
        });
      },

      setParams(changes) {
        patch({ params: { ...get().studio.params, ...changes } });
      },

      setOutDtype(dtype) {
        patch({ outDtype: dtype });
      },

      setMergeName(name) {
        patch({ mergeName: name === '' ? null : name });
      },

      async setReadDtype(dtype) {
        if (dtype === get().studio.readDtype) return;
        ctx.generation++;
        patch({ readDtype: dtype });
        // The statistics were counted at the old precision: count them again.
        if (get().studio.analysis.status !== 'idle') await get().runAnalysis();
      },

      applyRecipe(recipe, from, notes = []) {
        const models = get().studio.models;
        const loaded = models.filter((m) => m.role === 'agent').map((m) => m.label);
        const loadedBase = models.find((m) => m.role === 'base')?.label ?? null;
        const agents = agentCount();
        let params = recipe.params;
        let gradients = recipe.gradients ?? null;
        let restored: NonNullable<StudioSlice['studio']['restored']> = {
          from,
          base: recipe.base,
          agents: recipe.agents,
          unhonoured: [...notes],
        };
        // A recipe that names its models goes to the loaded agents by name, the rest by position.
        if (agents > 0 && recipe.agents.length > 0) {
          const { rows, order } = mapRecipeModels(recipe.agents, loaded);
          const reordered = reorderRecipe(
            params,
            gradients ?? { global: {}, models: [] },
            order,
            defaultParams(params.method, agents),
          );
          params = reordered.params;
          gradients = hasGradients(reordered.gradients) ? reordered.gradients : null;
          restored = {
            ...restored,
            mapping: rows,
            unhonoured: unhonoured({ notes, rows, loaded, order, recipeBase: recipe.base ?? '', loadedBase }),
          };
        }
        patch({
          params: agents > 0 ? fitParams(params, agents) : params,
          gradients: gradients && hasGradients(gradients) ? gradients : null,
          outDtype: recipe.outDtype,
          restored,
          recipeProblem: null,
        });
        // A recipe's read precision counts the statistics again where they were counted at another.
        if (recipe.readDtype !== undefined) void get().setReadDtype(recipe.readDtype);
      },

      setRecipeProblem(problem) {
        patch({ recipeProblem: problem });
      },

      clearGradient(key, agent) {
        const gradients = get().studio.gradients;
        if (!gradients) return;
        const drop = (own: Record<string, Setting> | undefined): Record<string, Setting> => {
          const { [key]: _dropped, ...rest } = own ?? {};
          return rest;
        };
        const next =
          agent === null
            ? { global: drop(gradients.global), models: gradients.models }
            : {
                global: gradients.global,
                models: gradients.models.map((m, t) => (t === agent ? drop(m) : m)),
              };
        patch({ gradients: hasGradients(next) ? next : null });
      },
    };
  };
}

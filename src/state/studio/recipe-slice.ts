// The recipe part of the studio: method, parameters (each per-agent list generic over the parameter
// specs, src/methods/params.ts), output dtype, and recipes offered from a session, a link or YAML.
import type { StateCreator } from 'zustand';
import { at } from '../../io/checked.ts';
import { defaultParams, paramsRecord } from '../../methods/defaults.ts';
import { specOf, USER_PARAMS } from '../../methods/params.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import type { StudioContext } from './context.ts';
import type { RecipeActions, StudioSlice } from './types.ts';

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
        patch({ params: switchMethod(get().studio.params, method, agentCount()) });
      },

      setParams(changes) {
        patch({ params: { ...get().studio.params, ...changes } });
      },

      setOutDtype(dtype) {
        patch({ outDtype: dtype });
      },

      async setReadDtype(dtype) {
        if (dtype === get().studio.readDtype) return;
        ctx.generation++;
        patch({ readDtype: dtype });
        // The statistics were counted at the old precision: count them again.
        if (get().studio.analysis.status !== 'idle') await get().runAnalysis();
      },

      applyRecipe(recipe, from) {
        const agents = agentCount();
        patch({
          params: agents > 0 ? fitParams(recipe.params, agents) : recipe.params,
          outDtype: recipe.outDtype,
          restored: { from, base: recipe.base, agents: recipe.agents },
          recipeProblem: null,
        });
        // A recipe's read precision counts the statistics again where they were counted at another.
        if (recipe.readDtype !== undefined) void get().setReadDtype(recipe.readDtype);
      },

      setRecipeProblem(problem) {
        patch({ recipeProblem: problem });
      },
    };
  };
}

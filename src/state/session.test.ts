// The session recipe's link and storage forms: a round trip keeps every field, and whatever a link
// carries is checked field by field (paths, unknown methods, non-numbers, oversized lists refused).
import { describe, expect, it } from 'vitest';
import { at } from '../io/checked.ts';
import {
  parseSessionRecipe,
  recipeFragment,
  recipeFromFragment,
  serializeSessionRecipe,
  SessionRecipeError,
  type SessionRecipe,
} from './session.ts';

const recipe: SessionRecipe = {
  base: 'Qwen2-0.5B',
  agents: ['coder', 'writer ✍', 'planner'],
  params: {
    method: 'dare_ties',
    epsilon: 2e-6,
    r: 0.3,
    alpha: 1.5,
    lambda: 0.75,
    density: [0.2, 0.5, 0.9],
    weights: [1, 0.5, 0.25],
    normalize: false,
    seed: 4_000_000_000,
  },
  outDtype: 'F16',
};

const bad = (change: (doc: Record<string, unknown>) => void): string => {
  const doc = JSON.parse(serializeSessionRecipe(recipe)) as Record<string, unknown>;
  change(doc);
  return JSON.stringify(doc);
};

describe('session recipe', () => {
  it('survives the link form with every field, unicode labels included', () => {
    const fragment = recipeFragment(recipe);
    expect(fragment).toMatch(/^recipe=[A-Za-z0-9_-]+$/);
    expect(recipeFromFragment(`#${fragment}`)).toEqual(recipe);
    expect(recipeFromFragment(`#other=1&${fragment}`)).toEqual(recipe);
  });

  it('finds no recipe in a fragment without one', () => {
    expect(recipeFromFragment('')).toBeNull();
    expect(recipeFromFragment('#export-heading')).toBeNull();
  });

  it('refuses a fragment that is not a recipe', () => {
    expect(() => recipeFromFragment('#recipe=%%%')).toThrow(SessionRecipeError);
    expect(() => recipeFromFragment(`#recipe=${btoa('not json')}`)).toThrow(/not valid JSON/);
  });

  it('refuses paths, unknown methods and dtypes, non-numbers, bad seeds and oversized lists', () => {
    const cases: [string, RegExp][] = [
      [bad((d) => (d.base = '/home/me/models/base')), /not a path/],
      [bad((d) => (d.agents = ['C:\\weights\\a'])), /not a path/],
      [bad((d) => ((d.params as Record<string, unknown>).method = 'nuslerp')), /unknown method/],
      [bad((d) => (d.outDtype = 'F64')), /unknown output dtype/],
      [bad((d) => (d.readDtype = 'F64')), /unknown read precision "F64"/],
      [bad((d) => ((d.params as Record<string, unknown>).lambda = 'big')), /params.lambda/],
      [bad((d) => ((d.params as Record<string, unknown>).weights = [1, null])), /params.weights\[1\]/],
      [bad((d) => ((d.params as Record<string, unknown>).seed = 2 ** 32)), /params.seed/],
      [bad((d) => ((d.params as Record<string, unknown>).density = new Array(65).fill(0.5))), /at most 64/],
      [bad((d) => (d.v = 2)), /version/],
      [bad((d) => (d.agents = ['x'.repeat(201)])), /1 to 200 characters/],
    ];
    for (const [text, message] of cases) expect(() => parseSessionRecipe(text)).toThrow(message);
  });

  it('keeps the read precision ("compare at"), and leaves it out where an older session has none', () => {
    for (const readDtype of ['BF16', 'F16', 'F32', 'stored', null] as const)
      expect(parseSessionRecipe(serializeSessionRecipe({ ...recipe, readDtype }))).toEqual({
        ...recipe,
        readDtype,
      });
    expect(parseSessionRecipe(serializeSessionRecipe(recipe))).not.toHaveProperty('readDtype');
  });

  it('keeps a null base and a null output dtype', () => {
    const plain = { ...recipe, base: null, outDtype: null };
    expect(parseSessionRecipe(serializeSessionRecipe(plain))).toEqual(plain);
  });

  it('keeps a recipe’s gradients, filters and read dtype, and checks each point against its range', () => {
    const graded: SessionRecipe = {
      ...recipe,
      gradients: {
        global: { lambda: [1, 0.5] },
        models: [{ density: [1, 0.7, 0.1] }, {}, { weight: [{ filter: 'mlp', value: 0.5 }, { value: 0 }] }],
      },
      readDtype: 'F16',
    };
    expect(parseSessionRecipe(serializeSessionRecipe(graded))).toEqual(graded);
    const broken = (change: (g: { models: Record<string, unknown>[] }) => void): string => {
      const doc = JSON.parse(serializeSessionRecipe(graded)) as {
        gradients: { models: Record<string, unknown>[] };
      };
      change(doc.gradients);
      return JSON.stringify(doc);
    };
    const cases: [string, RegExp][] = [
      [broken((g) => (at(g.models, 0).density = [1, 5])), /gradients.models\[0\].density\[1\] is outside/],
      [broken((g) => (at(g.models, 0).density = 0.5)), /gradient or a filter list/],
      [broken((g) => (at(g.models, 0).nonsense = [1])), /has no parameter "nonsense"/],
      [broken((g) => (at(g.models, 2).weight = [{ filter: 3, value: 1 }])), /filter must be text/],
      [broken((g) => (at(g.models, 0).density = [])), /1 to 1024 numbers/],
    ];
    for (const [text, message] of cases) expect(() => parseSessionRecipe(text)).toThrow(message);
    expect(() => parseSessionRecipe(bad((d) => (d.readDtype = 'F64')))).toThrow(/unknown read precision/);
  });
});

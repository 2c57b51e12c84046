import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defaultParams, paramsRecord } from '../../methods/defaults.ts';
import { at, must } from '../../io/checked.ts';
import { parseMergekitYaml, toMergekitYaml } from '../../methods/recipe.ts';
import { recipeResolver } from '../../methods/resolve.ts';
import {
  gradientsOf,
  mapRecipeModels,
  mergeSettings,
  recipeModelName,
  reorderRecipe,
  settingText,
  unhonoured,
} from './recipe-import.ts';

const TIES = readFileSync(new URL('../../cli/mergekit-examples/ties.yml', import.meta.url), 'utf8');
const NAMES = [
  'model.embed_tokens.weight',
  ...[0, 1, 2, 3].flatMap((l) => [
    `model.layers.${l}.self_attn.q_proj.weight`,
    `model.layers.${l}.mlp.up_proj.weight`,
  ]),
  'model.norm.weight',
  'lm_head.weight',
];

describe('recipeModelName', () => {
  it('is the last part of a path or Hub id, without .safetensors, in lower case', () => {
    expect(recipeModelName('garage-bAInd/Platypus2-13B')).toBe('platypus2-13b');
    expect(recipeModelName('/models/Agent-1/')).toBe('agent-1');
    expect(recipeModelName('C:\\m\\door.safetensors')).toBe('door');
  });
});

describe('mapRecipeModels', () => {
  const recipe = ['psmathur/orca_mini_v3_13b', 'garage-bAInd/Platypus2-13B', 'WizardLM/WizardMath-13B-V1.0'];

  it('gives each recipe model the loaded agent of its name, then the rest by position', () => {
    const { rows, order } = mapRecipeModels(recipe, ['Platypus2-13B', 'other', 'orca_mini_v3_13b']);
    expect(order).toEqual([1, 2, 0]);
    expect(rows).toEqual([
      { recipe: recipe[0], loaded: 'orca_mini_v3_13b', by: 'name' },
      { recipe: recipe[1], loaded: 'Platypus2-13B', by: 'name' },
      { recipe: recipe[2], loaded: 'other', by: 'position' },
    ]);
  });

  it('leaves recipe models without an agent, and agents without a recipe model, unmapped', () => {
    expect(mapRecipeModels(recipe, ['a']).rows.map((r) => r.loaded)).toEqual(['a', null, null]);
    expect(mapRecipeModels(recipe.slice(0, 1), ['x', 'orca_mini_v3_13b']).order).toEqual([-1, 0]);
  });

  it('maps one name once, even when two recipe models share it', () => {
    expect(mapRecipeModels(['a/m', 'b/m'], ['m', 'm2']).order).toEqual([0, 1]);
  });
});

describe('the studio reads a recipe as the CLI does', () => {
  const parsed = parseMergekitYaml(TIES, 'ties.yml');
  const settingsOf = must(parsed.settings, 'the recipe settings');
  const notes = must(parsed.notes, 'the recipe notes');
  const loaded = ['WizardMath-13B-V1.0', 'orca_mini_v3_13b', 'Platypus2-13B'];

  it('keeps the gradients and filters (not the scalars), shown as they are', () => {
    const gradients = gradientsOf(settingsOf);
    expect(gradients.models[0]).toEqual({ density: [1, 0.7, 0.1] });
    expect(gradients.models[1]).toEqual({ weight: [0, 0.3, 0.7, 1] });
    expect(gradients.models[2]).toEqual({ weight: [{ filter: 'mlp', value: 0.5 }, { value: 0 }] });
    expect(settingText(must(at(gradients.models, 0).density, 'density'))).toBe('[1, 0.7, 0.1]');
    expect(settingText(must(at(gradients.models, 2).weight, 'weight'))).toBe('“mlp”: 0.5; otherwise 0');
  });

  it('gives every tensor, for the agents loaded in another order, the parameters the CLI resolves', () => {
    const { order } = mapRecipeModels(parsed.models, loaded);
    expect(order).toEqual([2, 0, 1]);
    const studio = reorderRecipe(parsed.params, gradientsOf(settingsOf), order, defaultParams('ties', 3));
    const settings = must(mergeSettings(studio.params, studio.gradients, 3), 'settings');
    const studioResolve = recipeResolver(
      { base: 'base', models: loaded, params: studio.params, settings, labels: true },
      NAMES,
      'studio',
    );
    const cliResolve = must(recipeResolver(parsed, NAMES, 'ties.yml'), 'the CLI resolver');
    if (!studioResolve) throw new Error('the studio recipe has no resolver');
    for (const name of NAMES) {
      const cli = paramsRecord(cliResolve(name));
      const got = paramsRecord(studioResolve(name));
      for (const key of ['weights', 'density'] as const)
        expect(got[key], `${name} ${key}`).toEqual(order.map((i) => at(cli[key] as number[], i)));
      expect(got.normalize).toBe(cli.normalize);
      expect(got.lambda).toBe(cli.lambda);
    }
    // The gradients and the filter did vary the parameters (the check above is not of constants).
    const layer0 = paramsRecord(studioResolve('model.layers.0.mlp.up_proj.weight'));
    const layer3 = paramsRecord(studioResolve('model.layers.3.self_attn.q_proj.weight'));
    expect(layer0.density).toEqual([0.33, 1, 0.5]);
    expect(layer3.density).toEqual([0.33, 0.1, 0.5]);
    expect(layer0.weights).toEqual([0.5, 1, 0]);
    expect(layer3.weights).toEqual([0, 1, 1]);
  });

  it('exports the gradients and the filter back into mergekit YAML', () => {
    const { order } = mapRecipeModels(parsed.models, parsed.models.map(recipeModelName));
    const studio = reorderRecipe(parsed.params, gradientsOf(settingsOf), order, defaultParams('ties', 3));
    const settings = mergeSettings(studio.params, studio.gradients, 3);
    const yaml = toMergekitYaml({ base: 'base', models: ['a', 'b', 'c'], params: studio.params, settings });
    const back = parseMergekitYaml(yaml, 'exported.yml');
    expect(back.settings?.models).toEqual(settingsOf.models);
    expect(yaml).toContain('filter: mlp');
  });

  it('a scalar set in place of a gradient applies to every tensor', () => {
    const gradients = gradientsOf(settingsOf);
    const withoutDensity = { ...gradients, models: [{}, at(gradients.models, 1), at(gradients.models, 2)] };
    const params = { ...parsed.params, density: [0.8, 0.5, 0.33] };
    const settings = must(mergeSettings(params, withoutDensity, 3), 'settings');
    expect(settings.models[0]).toEqual({ weight: 1, density: 0.8 });
    expect(mergeSettings(params, { global: {}, models: [{}, {}, {}] }, 3)).toBeUndefined();
  });

  it('lists what it cannot honour instead of dropping it', () => {
    const { rows, order } = mapRecipeModels(parsed.models, ['orca_mini_v3_13b', 'extra-agent']);
    const lines = unhonoured({
      notes: notes,
      rows,
      loaded: ['orca_mini_v3_13b', 'extra-agent'],
      order,
      recipeBase: parsed.base,
      loadedBase: 'my-base',
    });
    expect(lines).toEqual([
      ...notes,
      'WizardLM/WizardMath-13B-V1.0: no loaded agent is left for it, so its parameters are not used.',
      'base_model TheBloke/Llama-2-13B-fp16: the loaded base my-base is used in its place.',
    ]);
    // int8_mask and mergekit's float16 arithmetic are among the parser's notes.
    expect(lines.join('\n')).toMatch(/int8_mask/);
    expect(lines.join('\n')).toMatch(/dtype float16/);
    expect(
      unhonoured({ notes: [], rows: [], loaded: ['x'], order: [-1], recipeBase: '', loadedBase: null }),
    ).toEqual(["x: the recipe does not name it; it merges with the method's defaults."]);
  });
});

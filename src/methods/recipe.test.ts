// Reading mergekit recipes with mergekit's semantics: defaults, required weights, linear without a
// base, options without effect, gradients and filters, multi-document files, and errors that name the
// recipe, the model and the field.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { defaultParams } from './defaults.ts';
import { parseMergekitRecipes, parseMergekitYaml, RecipeError, shorten, toMergekitYaml } from './recipe.ts';
import { evaluateSetting, layerPosition, recipeResolver } from './resolve.ts';

const agents = (method: string, extra = '') =>
  [
    `merge_method: ${method}`,
    'base_model: /m/base',
    'models:',
    '  - model: /m/a',
    '    parameters:',
    '      weight: 0.5',
    '  - model: /m/b',
    '    parameters:',
    '      weight: 0.25',
    extra,
  ].join('\n');

function recipeError(text: string, file = 'r.yml'): string {
  try {
    parseMergekitRecipes(text, file);
  } catch (error) {
    expect(error).toBeInstanceOf(RecipeError);
    return (error as Error).message;
  }
  throw new Error('expected a RecipeError');
}

describe('mergekit defaults where a recipe says nothing', () => {
  it('TIES and DARE keep everything (density 1), not the flags’ 0.5', () => {
    for (const method of ['ties', 'dare_linear', 'dare_ties']) {
      const recipe = parseMergekitYaml(agents(method), 'r.yml');
      expect(recipe.params.density).toEqual([1, 1]);
      expect(defaultParams(method as 'ties', 2).density).toEqual([0.5, 0.5]);
    }
  });

  it('normalize: true for ties and linear, false for task_arithmetic and both DARE methods', () => {
    const normalize = (method: string) => parseMergekitYaml(agents(method), 'r.yml').params.normalize;
    expect(normalize('ties')).toBe(true);
    expect(normalize('task_arithmetic')).toBe(false);
    expect(normalize('dare_linear')).toBe(false);
    expect(normalize('dare_ties')).toBe(false);
    expect(
      parseMergekitYaml(agents('linear').replace('base_model: /m/base\n', ''), 'r.yml').params.normalize,
    ).toBe(true);
  });

  it('DARE rescales by the L1 rule unless the recipe says rescale: false or "density"', () => {
    expect(parseMergekitYaml(agents('dare_ties'), 'r.yml').params.rescale).toBe('l1');
    const off = parseMergekitYaml(agents('dare_ties', 'parameters:\n  rescale: false'), 'r.yml');
    expect(off.params.rescale).toBe('none');
    const paper = parseMergekitYaml(agents('dare_linear', 'parameters:\n  rescale: density'), 'r.yml');
    expect(paper.params.rescale).toBe('density');
  });

  it('refuses a model without weight, naming the recipe, the model and the field', () => {
    const message = recipeError(agents('ties').replace('      weight: 0.25', '      density: 0.5'));
    expect(message).toContain('r.yml');
    expect(message).toContain('models[1] (/m/b)');
    expect(message).toContain('weight is required');
  });

  it('takes a global weight as every model’s weight (mergekit’s fallback)', () => {
    const text = [
      'merge_method: task_arithmetic',
      'base_model: /m/base',
      'models:',
      '  - model: /m/a',
      '  - model: /m/b',
      'parameters:',
      '  weight: 0.5',
    ].join('\n');
    expect(parseMergekitYaml(text, 'r.yml').params.weights).toEqual([0.5, 0.5]);
  });
});

describe('dtype and options without effect', () => {
  it('reads dtype as the math dtype and out_dtype as the output, and says what precision is used', () => {
    const recipe = parseMergekitYaml(agents('ties', 'dtype: bfloat16'), 'r.yml');
    expect(recipe.mathDtype).toBe('BF16');
    expect(recipe.outDtype).toBe('BF16');
    expect(recipe.notes?.join('\n')).toMatch(/computes in float32/);
    const split = parseMergekitYaml(agents('ties', 'dtype: float32\nout_dtype: float16'), 'r.yml');
    expect([split.mathDtype, split.outDtype]).toEqual(['F32', 'F16']);
  });

  it('accepts int8_mask and run options with a one-line note each', () => {
    const recipe = parseMergekitYaml(
      agents('ties', 'parameters:\n  int8_mask: true\nlazy_unpickle: true'),
      'r.yml',
    );
    const notes = recipe.notes!.join('\n');
    expect(notes).toContain('int8_mask');
    expect(notes).toContain('lazy_unpickle');
  });

  it('still refuses what it cannot honour', () => {
    expect(recipeError(agents('ties', 'slices: []'))).toContain('slices');
    expect(recipeError(agents('slerp'))).toContain('merge_method "slerp"');
  });
});

describe('linear', () => {
  it('runs without a base (mergekit’s examples/linear.yml form)', () => {
    const recipe = parseMergekitYaml(agents('linear').replace('base_model: /m/base\n', ''), 'r.yml');
    expect(recipe.base).toBe('');
    expect(recipe.models).toEqual(['/m/a', '/m/b']);
  });

  it('refuses a base_model that is not among the weighted models, as mergekit needs a weight for it', () => {
    expect(recipeError(agents('linear'))).toMatch(/base_model.*weight/);
  });

  it('exports the linear form: no base_model, every model with its weight, normalize explicit', () => {
    const recipe = parseMergekitYaml(agents('linear').replace('base_model: /m/base\n', ''), 'r.yml');
    const doc = parse(toMergekitYaml(recipe)) as Record<string, unknown>;
    expect(doc.base_model).toBeUndefined();
    expect(doc.models).toEqual([
      { model: '/m/a', parameters: { weight: 0.5 } },
      { model: '/m/b', parameters: { weight: 0.25 } },
    ]);
    expect(doc.parameters).toEqual({ normalize: true });
  });
});

describe('export: every parameter explicit', () => {
  it('writes density, normalize, lambda and DARE’s rescale even where the recipe left them out', () => {
    const recipe = parseMergekitYaml(agents('dare_ties'), 'r.yml');
    const doc = parse(toMergekitYaml(recipe)) as { models: { parameters: object }[]; parameters: object };
    expect(doc.models[0]!.parameters).toEqual({ weight: 0.5, density: 1 });
    expect(doc.parameters).toEqual({ lambda: 1, normalize: false, rescale: true });
  });

  it('keeps gradients and filters as the recipe gave them', () => {
    const text = agents('ties').replace(
      '      weight: 0.25',
      '      weight: [0, 1]\n      density:\n        - filter: mlp\n          value: 0.5\n        - value: 1',
    );
    const doc = parse(toMergekitYaml(parseMergekitYaml(text, 'r.yml'))) as {
      models: { parameters: object }[];
    };
    expect(doc.models[1]!.parameters).toEqual({
      weight: [0, 1],
      density: [{ filter: 'mlp', value: 0.5 }, { value: 1 }],
    });
  });

  it('says where the inputs are labels rather than paths', () => {
    const recipe = { ...parseMergekitYaml(agents('ties'), 'r.yml'), labels: true };
    expect(toMergekitYaml(recipe)).toMatch(/^# .*labels/m);
  });
});

describe('gradients and filters, as mergekit evaluates them', () => {
  it('interpolates a list over t and picks the first matching filter', () => {
    // mergekit/config.py evaluate_setting, worked by hand.
    expect(evaluateSetting([1, 0.7, 0.1], 'x', 0)).toBe(1);
    expect(evaluateSetting([1, 0.7, 0.1], 'x', 0.5)).toBe(0.7);
    expect(evaluateSetting([1, 0.7, 0.1], 'x', 0.75)).toBeCloseTo(0.4, 15);
    expect(evaluateSetting([0, 0.3, 0.7, 1], 'x', 0.5)).toBeCloseTo(0.5, 15);
    const filtered = [{ filter: 'mlp', value: 0.5 }, { value: 0 }];
    expect(evaluateSetting(filtered, 'model.layers.0.mlp.up_proj.weight', 0)).toBe(0.5);
    expect(evaluateSetting(filtered, 'model.layers.0.self_attn.q_proj.weight', 0)).toBe(0);
    expect(evaluateSetting([{ filter: 'mlp', value: 0.5 }], 'lm_head.weight', 1)).toBeUndefined();
  });

  it('places layer i of L at i/(L−1), and every weight outside the layers (embeddings, final norm, head) at 0, as mergekit now does', () => {
    expect(layerPosition('model.layers.0.mlp.up_proj.weight', 5)).toBe(0);
    expect(layerPosition('model.layers.3.mlp.up_proj.weight', 5)).toBe(0.75);
    expect(layerPosition('model.embed_tokens.weight', 5)).toBe(0);
    // mergekit now reads the weights after the layers at t = 0 too (plan_module's one config reader).
    expect(layerPosition('lm_head.weight', 5)).toBe(0);
    expect(layerPosition('model.norm.weight', 5)).toBe(0);
  });

  it('fails before any merge when a filter leaves a tensor without its required weight', () => {
    const text = agents('ties').replace(
      '      weight: 0.25',
      '      weight:\n        - filter: mlp\n          value: 0.5',
    );
    const recipe = parseMergekitYaml(text, 'r.yml');
    expect(() =>
      recipeResolver(recipe, ['model.layers.0.mlp.up_proj.weight', 'lm_head.weight'], 'r.yml'),
    ).toThrow(/\/m\/b: lm_head\.weight: weight is required/);
  });

  it('resolves each tensor’s weights and densities', () => {
    const text = agents('ties').replace('      weight: 0.25', '      weight: [0, 1]\n      density: 0.5');
    const resolve = recipeResolver(
      parseMergekitYaml(text, 'r.yml'),
      ['model.layers.0.a.w', 'model.layers.2.a.w'],
      'r.yml',
    )!;
    expect(resolve('model.layers.0.a.w')).toMatchObject({ weights: [0.5, 0], density: [1, 0.5] });
    expect(resolve('model.layers.2.a.w')).toMatchObject({ weights: [0.5, 1], density: [1, 0.5] });
  });
});

describe('errors that say what is wrong (issue 10)', () => {
  it('refuses an alias cycle clearly', () => {
    const message = recipeError('merge_method: ram\nbase_model: /m/base\nmodels: &loop\n  - *loop\n');
    expect(message).toContain('alias cycle');
    expect(message).not.toMatch(/circular structure|JSON/);
  });

  it('names the recipe, the model and the field of a value out of range, without the usage text', () => {
    const message = recipeError(
      agents('ties').replace('      weight: 0.25', '      weight: 0.25\n      density: 1.5'),
    );
    expect(message).toBe('r.yml: models[1] (/m/b) density: 1.5 is outside (0, 1]');
    expect(recipeError(agents('ties', 'parameters:\n  epsilon: -1'))).toContain(
      'parameters.epsilon: -1 must be ≥ 0',
    );
  });

  it('shortens a long path in every message', () => {
    const long = `/m/${'x'.repeat(5000)}`;
    const message = recipeError(
      agents('ties').replace('/m/b', long).replace('      weight: 0.25', '      density: 2'),
      `/r/${'y'.repeat(5000)}.yml`,
    );
    expect(message.length).toBeLessThan(400);
    expect(message).toContain('…');
    expect(shorten('short')).toBe('short');
  });
});

describe('multi-document recipes (mergekit-multi)', () => {
  const stage = (name: string | undefined, base: string, model: string) =>
    [
      ...(name ? [`name: ${name}`] : []),
      'merge_method: task_arithmetic',
      `base_model: ${base}`,
      'models:',
      `  - model: ${model}`,
      '    parameters:',
      '      weight: 1',
    ].join('\n');

  it('reads every document in order, with its name', () => {
    const recipes = parseMergekitRecipes(
      [stage('first', '/m/base', '/m/a'), stage(undefined, '/m/base', 'first')].join('\n---\n'),
      'r.yml',
    );
    expect(recipes.map((r) => r.name)).toEqual(['first', undefined]);
    expect(recipes[1]!.models).toEqual(['first']);
  });

  it('says what is supported when a stage before the last has no name', () => {
    const message = recipeError(
      [stage(undefined, '/m/base', '/m/a'), stage(undefined, '/m/base', '/m/b')].join('\n---\n'),
    );
    expect(message).toMatch(/document 1 has no name.*every stage but the last/);
  });

  it('the studio’s single-recipe import refuses several documents with a pointer to the CLI', () => {
    expect(() =>
      parseMergekitYaml(
        [stage('a', '/m/base', '/m/a'), stage(undefined, '/m/base', 'a')].join('\n---\n'),
        'r.yml',
      ),
    ).toThrow(/multi-document recipe runs from the command line/);
  });
});

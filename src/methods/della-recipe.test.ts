// mergekit recipes of della, della_linear and slerp read with mergekit's semantics: DELLA's per-model
// `epsilon` is dellaEpsilon (not RAM's ε), `rescale` defaults to mergekit's L1 rule, `normalize` to
// mergekit's per-method default; SLERP's `t` is global and may be a gradient. Written back, the same.
import { describe, expect, it } from 'vitest';
import { parseMergekitYaml, toMergekitYaml } from './recipe.ts';
import { tensorParamsOf } from './resolve.ts';
import { validateParams } from './defaults.ts';

const della = (method: string, extra: string) =>
  [
    `merge_method: ${method}`,
    'base_model: /m/base',
    'models:',
    '  - model: /m/a',
    '    parameters: { weight: 1.0, density: 0.5, epsilon: 0.1 }',
    '  - model: /m/b',
    '    parameters: { weight: 0.5, density: 0.7 }',
    extra,
  ].join('\n');

describe('DELLA recipes', () => {
  it('reads per-model epsilon as dellaEpsilon, mergekit’s 0.15 elsewhere, and mergekit’s defaults', () => {
    const { params } = parseMergekitYaml(della('della', ''), 'd.yml');
    expect(params.method).toBe('della');
    expect(params.dellaEpsilon).toEqual([0.1, 0.15]);
    expect(params.density).toEqual([0.5, 0.7]);
    expect(params.rescale).toBe('l1');
    expect(params.normalize).toBe(true);
    // RAM's ε is untouched.
    expect(params.epsilon).toBe(1e-5);
    const linear = parseMergekitYaml(
      della('della_linear', 'parameters: { epsilon: 0.2, rescale: false }'),
      'd.yml',
    );
    // A global epsilon is every model's that does not set its own.
    expect(linear.params.dellaEpsilon).toEqual([0.1, 0.2]);
    expect(linear.params.rescale).toBe('none');
    expect(linear.params.normalize).toBe(false);
  });

  it('has the merge refuse density ± epsilon outside (0, 1) as mergekit does, naming the model', () => {
    // Values may differ per tensor (gradients): the check is the merge's (validateParams, the engines).
    const text = della('della', '').replace('density: 0.7 }', 'density: 0.7, epsilon: 0.4 }');
    const { params } = parseMergekitYaml(text, 'd.yml');
    expect(validateParams(params, 2)).toEqual([
      'DELLA agent 2: density ± dellaEpsilon must lie inside (0, 1) (mergekit refuses it too), got 0.7 ± 0.4',
    ]);
  });

  it('writes epsilon per model and rescale back, and reads the same', () => {
    const recipe = parseMergekitYaml(della('della', ''), 'd.yml');
    const yaml = toMergekitYaml(recipe);
    expect(yaml).toMatch(/epsilon: 0\.1/);
    expect(yaml).toMatch(/rescale: true/);
    expect(yaml).toMatch(/# DELLA seed 0: merge-studio's own counter-based RNG/);
    expect(toMergekitYaml({ ...recipe, params: { ...recipe.params, rescale: 'density' } })).toMatch(
      /by 1\/p/,
    );
    const again = parseMergekitYaml(yaml, 'again.yml').params;
    expect([again.dellaEpsilon, again.density, again.weights, again.rescale]).toEqual([
      [0.1, 0.15],
      [0.5, 0.7],
      [1, 0.5],
      'l1',
    ]);
  });
});

describe('SLERP recipes', () => {
  const slerp = (t: string) =>
    `merge_method: slerp\nbase_model: /m/base\nmodels:\n  - model: /m/base\n  - model: /m/a\nparameters:\n  t: ${t}\n`;

  it('reads t, and a gradient of t per layer', () => {
    expect(parseMergekitYaml(slerp('0.25'), 's.yml').params.t).toBe(0.25);
    const recipe = parseMergekitYaml(slerp('[0, 1]'), 's.yml');
    expect(recipe.models).toEqual(['/m/a']);
    expect(tensorParamsOf(recipe, 'model.layers.1.mlp.up_proj.weight', 0.5, 's.yml').t).toBe(0.5);
    expect(tensorParamsOf(recipe, 'model.layers.0.mlp.up_proj.weight', 0, 's.yml').t).toBe(0);
  });
});

// Model Breadcrumbs: mergekit's counts (worked by hand from `magnitude_outliers`), and the reference's
// band on small tensors whose kept entries are listed by hand, ties included.
import { describe, expect, it } from 'vitest';
import { bandCounts } from './band.ts';
import { defaultParams, mergekitDefaults } from './defaults.ts';
import { parseMergekitYaml, toMergekitYaml } from './recipe.ts';
import { bandTaus, referenceMerge, type TensorValues } from './reference.ts';
import { tensorParamsOf } from './resolve.ts';

describe('bandCounts (mergekit magnitude_outliers)', () => {
  it('drops floor(gamma·n) outliers and keeps floor(density·n)', () => {
    // n = 1000: target_n = 900, n_top = 10, n_bot = 90.
    expect(bandCounts(0.9, 0.01, 1000)).toEqual({ outliers: 10, kept: 900 });
    // n = 257, density 0.3, gamma 0.05: target_n = 77, n_top = 12.
    expect(bandCounts(0.3, 0.05, 257)).toEqual({ outliers: 12, kept: 77 });
  });

  it('shrinks the outliers where target_n + n_top exceeds n (n_bot < 0)', () => {
    // n = 1000, density 0.995: target_n = 995, n_top = 10, n_bot = −5 → n_top = 5.
    expect(bandCounts(0.995, 0.01, 1000)).toEqual({ outliers: 5, kept: 995 });
  });

  it('keeps τ whole from density 1 up, as mergekit returns it', () => {
    expect(bandCounts(1, 0.2, 50)).toEqual({ outliers: 0, kept: 50 });
  });

  it('drops no outlier where floor(gamma·n) is 0 (mergekit would keep nothing)', () => {
    // n = 64 at gamma 0.01: n_top = 0; target_n = 32.
    expect(bandCounts(0.5, 0.01, 64)).toEqual({ outliers: 0, kept: 32 });
    expect(bandCounts(0.5, 0, 1000)).toEqual({ outliers: 0, kept: 500 });
  });
});

describe('the breadcrumbs reference', () => {
  // One agent of 10 elements, base 0: |τ| = 9, 8, 5, 5, 5, 5, 3, 2, 1, 0.5 at indices 0..9 shuffled.
  const tau = [5, -9, 0.5, 5, 3, -5, 8, 1, 5, 2];
  const values: TensorValues = {
    name: 'band',
    dtype: 'F32',
    base: new Float64Array(10),
    agents: [Float64Array.from(tau)],
  };

  it('keeps the ranks after the outliers, equal magnitudes lowest index first', () => {
    // density 0.4 → 4 kept; gamma 0.2 → 2 outliers (−9 at 1, 8 at 6). Next: the four 5s at 0, 3, 5, 8.
    expect(Array.from(bandTaus(values, [0.4], [0.2]).values[0]!)).toEqual([5, 0, 0, 5, 0, -5, 0, 0, 5, 0]);
    // density 0.3 → 3 kept after the 2 outliers: three of the four 5s, the lowest indices 0, 3, 5.
    expect(Array.from(bandTaus(values, [0.3], [0.2]).values[0]!)).toEqual([5, 0, 0, 5, 0, -5, 0, 0, 0, 0]);
    // gamma 0.3 → 3 outliers: −9, 8 and the first 5 (index 0); then 2 kept: the 5s at 3 and 5.
    expect(Array.from(bandTaus(values, [0.2], [0.3]).values[0]!)).toEqual([0, 0, 0, 5, 0, -5, 0, 0, 0, 0]);
  });

  it('merges as task arithmetic (breadcrumbs) and with the sign election (breadcrumbs_ties)', () => {
    const two: TensorValues = {
      ...values,
      agents: [Float64Array.from(tau), Float64Array.from(tau, (x) => -x / 2)],
    };
    const base = { ...defaultParams('breadcrumbs', 2), density: [0.4, 0.4], gamma: [0.2, 0.2], lambda: 1 };
    // Both agents keep indices 0, 3, 5, 8: τ + (−τ/2) = τ/2 there.
    expect(Array.from(referenceMerge(two, base, []))).toEqual([2.5, 0, 0, 2.5, 0, -2.5, 0, 0, 2.5, 0]);
    const ties = { ...base, method: 'breadcrumbs_ties' as const, normalize: false };
    // The sign vote follows the larger agent: only its entries count.
    expect(Array.from(referenceMerge(two, ties, []))).toEqual([5, 0, 0, 5, 0, -5, 0, 0, 5, 0]);
  });
});

describe('breadcrumbs recipes', () => {
  it('take mergekit’s defaults: density 1, gamma 0.01, normalize false, no rescale', () => {
    for (const method of ['breadcrumbs', 'breadcrumbs_ties'] as const) {
      const params = mergekitDefaults(method, 2);
      expect(params.density).toEqual([1, 1]);
      expect(params.gamma).toEqual([0.01, 0.01]);
      expect(params.normalize).toBe(false);
      expect(params.rescale).toBeUndefined();
    }
  });

  it('read per-model gamma, write it back, and read the written recipe to the same parameters', () => {
    const yaml = [
      'merge_method: breadcrumbs_ties',
      'base_model: /m/base',
      'parameters: { gamma: 0.02 }',
      'models:',
      '  - model: /m/a',
      '    parameters: { weight: 1, density: 0.8, gamma: 0.05 }',
      '  - model: /m/b',
      '    parameters: { weight: 0.5, density: 0.6 }',
    ].join('\n');
    const recipe = parseMergekitYaml(yaml, 'r.yml');
    expect(recipe.params.gamma).toEqual([0.05, 0.02]);
    expect(recipe.params.density).toEqual([0.8, 0.6]);
    const again = parseMergekitYaml(toMergekitYaml(recipe), 'again.yml');
    expect(again.params).toEqual(recipe.params);
    // And per tensor through the resolver.
    expect(tensorParamsOf(recipe, 'model.layers.0.mlp.up_proj.weight', 0, 'r.yml').gamma).toEqual([
      0.05, 0.02,
    ]);
  });

  it('refuses a gamma outside [0, 1], naming the recipe, the model and the field', () => {
    const yaml =
      'merge_method: breadcrumbs\nbase_model: /b\nmodels:\n  - model: /a\n    parameters: { weight: 1, gamma: 1.5 }\n';
    expect(() => parseMergekitYaml(yaml, 'r.yml')).toThrow(
      'r.yml: models[0] (/a) gamma: 1.5 is outside [0, 1]',
    );
  });
});

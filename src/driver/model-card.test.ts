// The model card's per-tensor parameter table: grouped by the values a recipe's gradients and filters
// gave each tensor, in linear time whatever the tensor count.
import { describe, expect, it } from 'vitest';
import { defaultParams } from '../methods/defaults.ts';
import type { MethodParams } from '../methods/types.ts';
import { perTensorLines } from './model-card.ts';

describe('perTensorLines', () => {
  it('groups 300k tensors into one row per set of values (a copy per tensor took minutes)', () => {
    const base = defaultParams('ties', 2);
    const halved: MethodParams = { ...base, density: [0.3, 0.2] };
    const used = new Map<string, MethodParams>();
    for (let i = 0; i < 300_000; i++) used.set(`model.layers.${i}.mlp.weight`, i % 3 === 0 ? halved : base);
    const lines = perTensorLines(used, ['a', 'b']);
    const rows = lines.filter((line) => line.startsWith('| ') && !line.startsWith('| weight'));
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain(
      'model.layers.0.mlp.weight, model.layers.3.mlp.weight, model.layers.6.mlp.weight … (100000)',
    );
    expect(rows[1]).toContain(
      'model.layers.1.mlp.weight, model.layers.2.mlp.weight, model.layers.4.mlp.weight … (200000)',
    );
  });

  it('writes no table where every tensor has the same values', () => {
    const params = defaultParams('ties', 2);
    expect(
      perTensorLines(
        new Map([
          ['a', params],
          ['b', params],
        ]),
        ['x', 'y'],
      ),
    ).toEqual([]);
  });
});

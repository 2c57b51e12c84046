// DARE's L1 rescale (mergekit's `rescale: true`): after the drop, each agent's task vector of a tensor
// has the L1 norm it had before; the windowed pre-pass gives the factor of a whole-tensor pass.
import { describe, expect, it } from 'vitest';
import { encodeFloats } from '../format/dtype.ts';
import { rng } from '../test/fixtures.ts';
import { dareScalesFor } from './dare-norms.ts';
import { defaultParams } from './defaults.ts';
import { dareTaus, referenceMerge, type TensorValues } from './reference.ts';
import type { TensorInput } from './tensors.ts';

function values(seed: number, n: number, agents: number): TensorValues {
  const random = rng(seed);
  const base = Float64Array.from({ length: n }, () => Math.fround(random() - 0.5));
  return {
    name: 'model.layers.0.mlp.up_proj.weight',
    dtype: 'F32',
    base,
    agents: Array.from({ length: agents }, () =>
      base.map((b) => (random() < 0.6 ? Math.fround(b + (random() - 0.5) * 0.01) : b)),
    ),
  };
}

function input(v: TensorValues): TensorInput {
  const slots = [v.base, ...v.agents].map((x) => encodeFloats('F32', x));
  return {
    name: v.name,
    numel: v.base.length,
    dtype: 'F32',
    read: (index, start, count, into) => {
      into.set(slots[index]!.subarray(start * 4, (start + count) * 4));
      return Promise.resolve();
    },
  };
}

const l1 = (x: ArrayLike<number>) => Array.from(x).reduce((s, e) => s + Math.abs(e), 0);

describe('DARE L1 rescale', () => {
  it('keeps each agent’s L1 norm per tensor, where 1/density does not', async () => {
    const v = values(91, 5000, 3);
    const params = {
      ...defaultParams('dare_linear', 3),
      density: [0.3, 0.5, 0.9],
      seed: 7,
      rescale: 'l1' as const,
    };
    const dareScales = await dareScalesFor(input(v), params, undefined, 777);
    expect(dareScales).toHaveLength(3);
    const rescaled = dareTaus(v, 0, { ...params, dareScales });
    const paper = dareTaus(v, 0, { ...params, rescale: 'density' });
    v.agents.forEach((agent, t) => {
      const before = l1(agent.map((x, i) => Math.fround(x - v.base[i]!)));
      expect(l1(rescaled.values[t]!)).toBeCloseTo(before, 9);
      expect(Math.abs(l1(paper.values[t]!) - before)).toBeGreaterThan(1e-6);
    });
  });

  it('the windowed pre-pass equals the whole-tensor reference merge', async () => {
    const v = values(17, 3001, 2);
    const params = { ...defaultParams('dare_ties', 2), density: [0.4, 0.7], seed: 3, rescale: 'l1' as const };
    const dareScales = await dareScalesFor(input(v), params, undefined, 256);
    const windowed = referenceMerge(v, { ...params, dareScales }, [1, 1]);
    const whole = referenceMerge(v, params, [1, 1]);
    windowed.forEach((x, i) => expect(x).toBeCloseTo(whole[i]!, 12));
  });

  it('is 1 where nothing is dropped, and for rescale: false', async () => {
    const v = values(5, 100, 2);
    const params = { ...defaultParams('dare_linear', 2), density: [1, 1], rescale: 'l1' as const };
    expect(await dareScalesFor(input(v), params)).toEqual([1, 1]);
    expect(await dareScalesFor(input(v), { ...params, density: [0.5, 0.5], rescale: 'none' })).toEqual([
      1, 1,
    ]);
    expect(
      await dareScalesFor(input(v), { ...params, density: [0.5, 0.5], rescale: 'density' }),
    ).toBeUndefined();
  });
});

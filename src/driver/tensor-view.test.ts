// explainElement with the CPU engine against the CPU reference of SPEC.md on fresh seeded tensors:
// stored values, τ, the ε decision, λ per method and the merged value rounded to the output dtype;
// and the refusals that name the tensor (unknown, not merged, index out of range).
import { describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import type { Model } from '../format/model.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import { taskVector } from '../methods/float32.ts';
import { referenceMerge, referenceStats, type TensorValues } from '../methods/reference.ts';
import { ramLambdas, sumStats, tensorLocalLambdas } from '../methods/stats.ts';
import { randomTensor, testParams } from '../test/tensors.ts';
import type { MethodName } from '../methods/types.ts';
import { floatTensor, memoryModel, rawTensor } from '../test/fixtures.ts';
import { explainElement } from './tensor-view.ts';

const AGENTS = 3;
const TENSORS = [
  { name: 'a.weight', dtype: 'BF16' as FloatDtype, shape: [20, 13] },
  { name: 'b.bias', dtype: 'F32' as FloatDtype, shape: [37] },
];
const values = TENSORS.map(
  (t, i): TensorValues =>
    randomTensor({
      name: t.name,
      dtype: t.dtype,
      numel: t.shape[0]! * (t.shape[1] ?? 1),
      agents: AGENTS,
      seed: 500 + i,
    }).values,
);

async function models(): Promise<{ base: Model; agents: Model[] }> {
  const ids = rawTensor('c.ids', 'I64', [2], new Uint8Array(16));
  const make = (k: number): Promise<Model> =>
    memoryModel(k === 0 ? 'base' : `agent${k}`, [
      ...TENSORS.map((t, i) =>
        floatTensor(t.name, t.dtype, t.shape, k === 0 ? values[i]!.base : values[i]!.agents[k - 1]!),
      ),
      ids,
    ]);
  return { base: await make(0), agents: await Promise.all([1, 2, 3].map(make)) };
}

const rounded = (dtype: FloatDtype, x: number): number =>
  decodeFloats(dtype, encodeFloats(dtype, [x]), 1)[0]!;

describe('explainElement', () => {
  const methods: MethodName[] = [
    'ram',
    'ramplus',
    'ramplus_soft',
    'ramplus_tl',
    'linear',
    'task_arithmetic',
    'ties',
    'breadcrumbs',
    'breadcrumbs_ties',
  ];
  it.each(methods)('%s: every field equals the CPU reference', async (method) => {
    const { base, agents } = await models();
    const params = testParams(method, AGENTS, 3);
    const totals = sumStats(
      values.map((v) => referenceStats(v, params.epsilon)),
      AGENTS,
    );
    const lambdas = ramLambdas(totals, method, params.r, params.alpha);
    let changedSeen = 0;
    for (const [i, v] of values.entries()) {
      const merged = referenceMerge(v, params, lambdas);
      const local = tensorLocalLambdas(
        referenceStats(v, params.epsilon),
        params.r,
        params.alpha,
        params.epsilon,
      );
      for (const index of [0, 5, v.base.length - 1, Math.floor(v.base.length / 2)]) {
        const engine = createCpuEngine({ agents: AGENTS });
        const shown = await explainElement({ base, agents, engine, params, tensor: TENSORS[i]!.name, index });
        const taus = v.agents.map((a) => taskVector(a[index]!, v.base[index]!));
        const changed = taus.map((tau) => Math.abs(tau) > Math.fround(params.epsilon));
        changedSeen += changed.filter(Boolean).length;
        const lambda =
          method === 'ramplus_tl'
            ? local
            : method === 'linear'
              ? [1, 1, 1]
              : ['task_arithmetic', 'ties', 'breadcrumbs', 'breadcrumbs_ties'].includes(method)
                ? [params.lambda, params.lambda, params.lambda]
                : lambdas;
        expect(shown).toEqual({
          tensor: TENSORS[i]!.name,
          index,
          method,
          base: v.base[index],
          agents: v.agents.map((a, t) => ({ value: a[index], tau: taus[t], changed: changed[t] })),
          contributors: changed.filter(Boolean).length,
          lambda,
          merged: rounded(TENSORS[i]!.dtype, merged[index]!),
          outDtype: TENSORS[i]!.dtype,
        });
      }
    }
    expect(changedSeen).toBeGreaterThan(0);
  });

  it('writes the merged value in the requested output dtype', async () => {
    const { base, agents } = await models();
    const params = testParams('ram', AGENTS, 1);
    const shown = await explainElement({
      base,
      agents,
      engine: createCpuEngine({ agents: AGENTS }),
      params,
      outDtype: 'F16',
      tensor: 'b.bias',
      index: 9,
    });
    const merged = referenceMerge(values[1]!, params, [1, 1, 1]);
    expect(shown.outDtype).toBe('F16');
    expect(shown.merged).toBe(rounded('F16', merged[9]!));
  });

  it('names the tensor when it is unknown, not merged, or the index is outside it', async () => {
    const { base, agents } = await models();
    const explain = (tensor: string, index: number): Promise<unknown> =>
      explainElement({
        base,
        agents,
        engine: createCpuEngine({ agents: AGENTS }),
        params: testParams('ram', AGENTS, 1),
        tensor,
        index,
      });
    await expect(explain('nope', 0)).rejects.toMatchObject({
      name: 'MergeError',
      tensor: 'nope',
      message: 'base has no tensor nope.',
    });
    await expect(explain('c.ids', 0)).rejects.toThrow(/c\.ids is not merged/);
    for (const index of [-1, 260, 1.5])
      await expect(explain('a.weight', index)).rejects.toMatchObject({
        name: 'MergeError',
        tensor: 'a.weight',
        message: `element ${index} is outside a.weight, which has 260 elements (0 to 259).`,
      });
  });
});

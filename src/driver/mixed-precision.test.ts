// f32 agents over a bf16 / f16 base on the CPU engine (SPEC.md "Inputs stored in other precisions"):
// by default every method and the statistics equal the same set stored at the base's dtypes, and the
// f64 reference on those values; with `stored` they equal the set stored all in f32. A finite value
// that rounds to ±Inf is non-finite, counted, and named in the merge's error. What the rounding
// removed is reported per agent, and an f32 set whose τ is dense gets the hint with both numbers.
import { describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { openModel, type Model } from '../format/model.ts';
import { memoryFolder } from '../io/sink.ts';
import { memorySource } from '../io/source.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import type { ReadDtype } from '../format/precision.ts';
import { referenceMerge } from '../methods/reference.ts';
import { METHOD_LIST } from '../methods/registry/index.ts';
import { ramLambdas } from '../methods/stats.ts';
import type { MethodName } from '../methods/types.ts';
import { floatTensor, memoryModel } from '../test/fixtures.ts';
import { MIXED_SHAPES, mixedSet } from '../test/mixed-precision.ts';
import { testParams } from '../test/tensors.ts';
import { analyzeModels, mergeModels } from './driver.ts';
import { comparePrecisions } from './precision-stats.ts';
import { statsJson } from './stats-json.ts';

async function merged(
  base: Model,
  agents: Model[],
  method: MethodName,
  readDtype?: ReadDtype,
  outDtype?: FloatDtype,
): Promise<Map<string, Uint8Array>> {
  const out = memoryFolder('out');
  await mergeModels({
    base,
    agents,
    engine: createCpuEngine({ agents: agents.length, maxWindowElements: 13 }),
    params: testParams(method, agents.length, 11),
    readDtype,
    outDtype,
    out,
    baseLabel: 'base',
    agentLabels: agents.map((a) => a.name),
  });
  return out.files;
}

/** The merged tensors' bytes (the card and recipe name the read precision, not the values). */
async function tensorsOf(files: Map<string, Uint8Array>): Promise<Map<string, Uint8Array>> {
  const model = await openModel(
    'out',
    [...files].map(([name, bytes]) => ({ name, source: memorySource(name, bytes) })),
  );
  const out = new Map<string, Uint8Array>();
  for (const t of model.tensors.values())
    out.set(`${t.name} ${t.dtype}`, await model.source(t.file).read(t.offset, t.end - t.begin));
  return out;
}

async function values(model: Model, name: string): Promise<Float64Array> {
  const t = model.tensors.get(name)!;
  const n = t.shape.reduce((a, b) => a * b, 1);
  return decodeFloats(t.dtype as FloatDtype, await model.source(t.file).read(t.offset, t.end - t.begin), n);
}

const methods = METHOD_LIST.map((d) => d.name);

describe('f32 agents over a bf16 base', () => {
  for (const method of methods) {
    const wide = method === 'slerp' ? [true] : [true, false, true];
    it(`${method}: at the base's precision by default, at stored precision with "stored"`, async () => {
      const set = await mixedSet(method.length * 7 + 1, wide);
      const byDefault = await tensorsOf(await merged(set.base, set.agents, method));
      expect(byDefault).toEqual(await tensorsOf(await merged(set.base, set.rounded, method)));
      const stored = await tensorsOf(await merged(set.base, set.agents, method, 'stored', 'F32'));
      expect(stored).toEqual(
        await tensorsOf(await merged(set.widened.base, set.widened.agents, method, undefined, 'F32')),
      );
      // The two differ: the sub-ulp steps counted at f32 are gone at bf16.
      expect(stored).not.toEqual(await tensorsOf(await merged(set.base, set.agents, method, 'BF16', 'F32')));

      // And the f64 reference on the values as read.
      const params = testParams(method, wide.length, 11);
      let lambdas = wide.map(() => 1);
      if (METHOD_LIST.find((d) => d.name === method)!.plan.lambdas === 'global') {
        const analysis = await analyzeModels({
          base: set.base,
          agents: set.rounded,
          engine: createCpuEngine({ agents: wide.length }),
          epsilon: params.epsilon,
        });
        lambdas = ramLambdas(analysis.totals, method, params.r, params.alpha);
      }
      for (const [name, dtype, shape] of MIXED_SHAPES) {
        const want = referenceMerge(
          {
            name,
            dtype,
            shape,
            base: await values(set.base, name),
            agents: await Promise.all(set.rounded.map((a) => values(a, name))),
          },
          params,
          lambdas,
        );
        expect(byDefault.get(`${name} ${dtype}`), name).toEqual(encodeFloats(dtype, want));
      }
    });
  }

  it('says in the model card what the read precision rounded', async () => {
    const set = await mixedSet(2, [true, false]);
    const card = (files: Map<string, Uint8Array>) => new TextDecoder().decode(files.get('README.md'));
    expect(card(await merged(set.base, set.agents, 'ties'))).toContain(
      'Inputs read at the base’s dtype (values rounded in 4 tensors).',
    );
    expect(card(await merged(set.base, set.agents, 'ties', 'stored'))).toContain(
      'Inputs read at stored precision.',
    );
    expect(card(await merged(set.base, set.rounded, 'ties'))).not.toContain('Inputs read at');
  });

  it('statistics equal those of the set stored at the base’s dtypes, and all in f32 with "stored"', async () => {
    const set = await mixedSet(5, [true, true, false]);
    const analyze = (base: Model, agents: Model[], readDtype?: ReadDtype) =>
      analyzeModels({ base, agents, engine: createCpuEngine({ agents: 3 }), epsilon: 1e-5, readDtype });
    expect(await analyze(set.base, set.agents)).toEqual(await analyze(set.base, set.rounded));
    expect(await analyze(set.base, set.agents, 'stored')).toEqual(
      await analyze(set.widened.base, set.widened.agents),
    );
  });

  it('reports each agent’s changed elements at stored precision beside those at D', async () => {
    const set = await mixedSet(9, [true, false, true]);
    const job = { base: set.base, agents: set.agents, engine: createCpuEngine({ agents: 3 }), epsilon: 1e-5 };
    const atD = await analyzeModels(job);
    const summary = await comparePrecisions(job, atD, ['a', 'b', 'c']);
    const stored = await analyzeModels({ ...job, readDtype: 'stored' });
    expect(summary.roundedTensors).toBe(MIXED_SHAPES.length);
    expect(summary.changedAtRead).toEqual(atD.totals.changed);
    expect(summary.changedStored).toEqual(stored.totals.changed);
    // Agent b is stored like the base: nothing to remove. The f32 agents lose their sub-ulp steps.
    expect(summary.changedStored[1]).toBe(summary.changedAtRead[1]);
    expect(summary.changedStored[0]).toBeGreaterThan(summary.changedAtRead[0]!);
    expect(summary.lines[0]).toMatch(
      /^a: \d+\.\d% of elements differ at stored precision, \d+\.\d% at bf16\.$/,
    );
    const json = statsJson(atD, ['a', 'b', 'c'], 0.3, 1, undefined, undefined, summary) as {
      readDtype: string;
      models: { changed: number; changedStored: number }[];
    };
    expect(json.readDtype).toBe('default');
    expect(json.models.map((m) => [m.changed, m.changedStored])).toEqual(
      atD.totals.changed.map((n, t) => [n, stored.totals.changed[t]]),
    );
  });

  it('hints at bf16 or a larger ε for an f32 set where nearly everything changed, with both numbers', async () => {
    const set = await mixedSet(3, [true, true], 1);
    const { base, agents } = set.widened;
    // ε below the smallest step: every f32 change counts, as sub-ulp optimiser steps do at 1e-5.
    const job = { base, agents, engine: createCpuEngine({ agents: 2 }), epsilon: 1e-9 };
    const analysis = await analyzeModels(job);
    const summary = await comparePrecisions(job, analysis, ['x', 'y']);
    const bf16 = await analyzeModels({ ...job, readDtype: 'BF16' });
    expect(summary.changedBf16).toEqual(bf16.totals.changed);
    expect(summary.lines).toHaveLength(3);
    expect(summary.lines[0]).toMatch(/^x: 100\.0% of elements differ at f32, \d+\.\d% at bf16\.$/);
    expect(summary.lines[2]).toContain('--read-dtype bf16');
    // A sparse f32 set has nothing to hint.
    const sparse = await mixedSet(3, [true, true], 0.1);
    const quiet = { ...job, base: sparse.widened.base, agents: sparse.widened.agents };
    expect((await comparePrecisions(quiet, await analyzeModels(quiet), ['x', 'y'])).lines).toEqual([]);
  });
});

describe('a finite value that rounds to ±Inf at the read precision', () => {
  async function overflowing(): Promise<{ base: Model; agents: Model[] }> {
    const name = 'model.layers.0.self_attn.q_proj.weight';
    return {
      base: await memoryModel('base', [floatTensor(name, 'BF16', [4], [1, 2, 3, 4])]),
      agents: [
        await memoryModel('fine', [floatTensor(name, 'BF16', [4], [1, 2.5, 3, 4])]),
        await memoryModel('huge', [floatTensor(name, 'F32', [4], [1, 2, 3.4e38, 4])]),
      ],
    };
  }

  it('is non-finite in the statistics, counted for its model', async () => {
    const { base, agents } = await overflowing();
    const job = { base, agents, engine: createCpuEngine({ agents: 2 }), epsilon: 1e-5 };
    const [tensor] = (await analyzeModels(job)).tensors;
    expect(tensor!.nonFinite).toBe(1);
    expect(tensor!.nonFiniteModels).toEqual([0, 0, 1]);
    // At stored precision it is a finite change.
    const [stored] = (await analyzeModels({ ...job, readDtype: 'stored' })).tensors;
    expect(stored!.nonFinite).toBe(0);
    expect(stored!.changed).toEqual([1, 1]);
  });

  it('stops a merge with an error naming the tensor, the model and the read precision', async () => {
    const { base, agents } = await overflowing();
    await expect(
      mergeModels({
        base,
        agents,
        engine: createCpuEngine({ agents: 2 }),
        params: testParams('ties', 2, 1),
        out: memoryFolder('out'),
        baseLabel: 'base',
        agentLabels: ['fine', 'huge'],
      }),
    ).rejects.toThrow(
      /cannot merge tensor model\.layers\.0\.self_attn\.q_proj\.weight: 1 element .*agent huge \(1\).* Read at BF16: agent huge holds finite values beyond BF16's range/,
    );
  });
});

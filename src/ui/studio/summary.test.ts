// The chart views of the statistics: layer grouping, layers summing to the model, derived pairs.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { analyzeModels } from '../../engine/driver.ts';
import { openModel } from '../../format/model.ts';
import { memorySource } from '../../io/source.ts';
import { createCpuEngine } from '../../methods/cpu-engine.ts';
import { layerOf, layerStats, pairwiseOverlap, resaveSuspects, signConflictRate } from './summary.ts';

async function demo(name: string) {
  const bytes = new Uint8Array(readFileSync(`public/demo/${name}/model.safetensors`));
  return openModel(name, [{ name: 'model.safetensors', source: memorySource('model.safetensors', bytes) }]);
}

describe('layerOf', () => {
  it.each([
    ['model.layers.12.self_attn.q_proj.weight', 'layers.12'],
    ['layers.0.weight', 'layers.0'],
    ['transformer.h.3.mlp.c_fc.weight', 'h.3'],
    ['head.bias', 'head'],
    ['task_embed.weight', 'task_embed'],
    ['lm_head.weight', 'lm_head'],
    ['scale', 'scale'],
  ])('%s → %s', (name, layer) => expect(layerOf(name)).toBe(layer));
});

describe('statistics views of the demo set', async () => {
  const base = await demo('base');
  const agents = await Promise.all(['key', 'door', 'gems'].map(demo));
  const analysis = await analyzeModels({
    base,
    agents,
    engine: createCpuEngine({ agents: 3 }),
    epsilon: 1e-5,
  });

  it('groups into the four modules, natural order, and the layers sum to the totals', () => {
    const layers = layerStats(analysis.tensors, 3);
    expect(layers.map((l) => [l.layer, l.tensors])).toEqual([
      ['head', 2],
      ['layers.0', 2],
      ['layers.1', 2],
      ['task_embed', 1],
    ]);
    const sum = (pick: (s: (typeof layers)[number]['stats']) => number[]): number[] =>
      layers.reduce(
        (acc, l) => acc.map((v, i) => v + pick(l.stats)[i]!),
        new Array<number>(pick(layers[0]!.stats).length).fill(0),
      );
    expect(sum((s) => s.changed)).toEqual(analysis.totals.changed);
    expect(sum((s) => s.unique)).toEqual(analysis.totals.unique);
    expect(sum((s) => s.counts)).toEqual(analysis.totals.counts);
    expect(layers.reduce((a, l) => a + l.stats.signConflicts, 0)).toBe(analysis.totals.signConflicts);
  });

  it('derives the pairwise overlaps docs/demo.md reports', () => {
    const pairs = pairwiseOverlap(analysis.totals)!;
    expect(pairs[0]![1]).toBe(7633);
    expect(pairs[1]![2]).toBe(7588);
    expect(pairs[0]![2]).toBe(3022);
    expect(pairs[1]![1]).toBe(18806);
  });

  it('has the sign-conflict rate of the shared elements and no re-save suspects', () => {
    expect(signConflictRate(analysis.totals)).toBeCloseTo(6998 / 13683, 12);
    expect(resaveSuspects(analysis.totals)).toEqual([false, false, false]);
  });
});

describe('pairwiseOverlap', () => {
  it('is null beyond three agents, where the counts do not fix the pairs', () => {
    expect(pairwiseOverlap({ agents: 4, overlap: [], counts: [], changed: [] })).toBeNull();
  });

  it('for two agents is the elements changed by both', () => {
    expect(
      pairwiseOverlap({
        agents: 2,
        overlap: [
          [3, 2],
          [1, 2],
        ],
        counts: [9, 4, 2],
        changed: [5, 3],
      }),
    ).toEqual([
      [5, 2],
      [2, 3],
    ]);
  });
});

describe('resaveSuspects', () => {
  it('flags an agent whose changes are nearly all one ulp', () => {
    expect(resaveSuspects({ changed: [100, 100, 0], oneUlp: [96, 50, 0] })).toEqual([true, false, false]);
  });
});

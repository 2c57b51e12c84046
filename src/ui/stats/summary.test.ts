// The chart views of the statistics: layer grouping, layers summing to the model, derived pairs.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { at, must } from '../../io/checked.ts';
import { analyzeModels } from '../../driver/driver.ts';
import { openModel } from '../../format/model.ts';
import { memorySource } from '../../io/source.ts';
import { createCpuEngine } from '../../engine/cpu-engine.ts';
import type { ModelStats } from '../../methods/stats.ts';
import { llamaSpecs } from '../../bench/llama-set.ts';
import { emptyTensorStats } from '../../methods/stats.ts';
import { rng } from '../../test/fixtures.ts';
import {
  agentSets,
  atlasKey,
  atlasOf,
  atlasRatio,
  overlapRatio,
  setMembers,
  branchCounts,
  expectedOutputBytes,
  filterTensors,
  isFiltered,
  layerOf,
  layerStats,
  moduleOf,
  moduleStats,
  NO_FILTER,
  pairwiseOverlap,
  resaveSuspects,
  signConflictRate,
  type TensorFilter,
} from './summary.ts';

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

  it('groups into the four modules, model order, and the layers sum to the totals', () => {
    const layers = layerStats(analysis.tensors, 3);
    expect(layers.map((l) => [l.layer, l.tensors])).toEqual([
      ['task_embed', 1],
      ['layers.0', 2],
      ['layers.1', 2],
      ['head', 2],
    ]);
    const sum = (pick: (s: (typeof layers)[number]['stats']) => number[]): number[] =>
      layers.reduce(
        (acc, l) => acc.map((v, i) => v + at(pick(l.stats), i)),
        new Array<number>(pick(at(layers, 0).stats).length).fill(0),
      );
    expect(sum((s) => s.changed)).toEqual(analysis.totals.changed);
    expect(sum((s) => s.unique)).toEqual(analysis.totals.unique);
    expect(sum((s) => s.counts)).toEqual(analysis.totals.counts);
    expect(layers.reduce((a, l) => a + l.stats.signConflicts, 0)).toBe(analysis.totals.signConflicts);
  });

  it('groups into module types whose integer sums equal the totals', () => {
    const modules = moduleStats(analysis.tensors, 3);
    expect(modules.map((m) => [m.module, m.tensors])).toEqual([
      ['embedding', 1],
      ['head', 2],
      ['other', 4],
    ]);
    const sum = (pick: (s: ModelStats) => number[]): number[] =>
      modules.reduce((acc, m) => acc.map((v, i) => v + at(pick(m.stats), i)), new Array<number>(3).fill(0));
    expect(sum((s) => s.changed)).toEqual(analysis.totals.changed);
    expect(sum((s) => s.unique)).toEqual(analysis.totals.unique);
    expect(sum((s) => s.shared)).toEqual(analysis.totals.shared);
    expect(sum((s) => s.counts.slice(0, 3))).toEqual(analysis.totals.counts.slice(0, 3));
    expect(modules.reduce((a, m) => a + at(m.stats.counts, 3), 0)).toBe(analysis.totals.counts[3]);
    expect(modules.reduce((a, m) => a + m.stats.numel, 0)).toBe(analysis.totals.numel);
    expect(modules.reduce((a, m) => a + m.stats.signConflicts, 0)).toBe(analysis.totals.signConflicts);
  });

  it('sends every element to exactly one merge branch', () => {
    const branches = branchCounts(analysis.totals);
    expect(branches.unchanged + branches.unique + branches.shared).toBe(analysis.totals.numel);
    expect(branches.unique).toBe(analysis.totals.unique.reduce((a, b) => a + b, 0));
    expect(branches.shared).toBe(13683);
  });

  it('derives the pairwise overlaps docs/demo.md reports', () => {
    const pairs = pairwiseOverlap(analysis.totals);
    expect(pairs?.[0]?.[1]).toBe(7633);
    expect(pairs?.[1]?.[2]).toBe(7588);
    expect(pairs?.[0]?.[2]).toBe(3022);
    expect(pairs?.[1]?.[1]).toBe(18806);
    // The counted pairs agree with the derivation from the counts, which N = 3 allows.
    expect(analysis.totals.pairs).toBeDefined();
    expect(pairwiseOverlap({ ...analysis.totals, pairs: undefined })).toEqual(pairs);
  });

  it('has the sign-conflict rate of the shared elements and no re-save suspects', () => {
    expect(signConflictRate(analysis.totals)).toBeCloseTo(6998 / 13683, 12);
    expect(resaveSuspects(analysis.totals)).toEqual([false, false, false]);
  });
});

describe('pairwiseOverlap', () => {
  it('without counted pairs is null beyond three agents, where the counts do not fix them', () => {
    expect(pairwiseOverlap({ agents: 4, overlap: [], counts: [], changed: [] })).toBeNull();
  });

  it('uses the counted pairs when present, for any number of agents', () => {
    const pairs = [
      [3, 1, 0, 2],
      [1, 2, 1, 0],
      [0, 1, 1, 0],
      [2, 0, 0, 2],
    ];
    const got = pairwiseOverlap({ agents: 4, overlap: [], counts: [], changed: [3, 2, 1, 2], pairs });
    expect(got).toEqual(pairs);
    expect(got).not.toBe(pairs);
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

describe('moduleOf', () => {
  it.each([
    ['model.layers.0.self_attn.q_proj.weight', 'attention'],
    ['model.layers.0.self_attn.o_proj.weight', 'attention'],
    ['model.layers.0.self_attn.q_norm.weight', 'norm'],
    ['transformer.h.0.attn.c_attn.weight', 'attention'],
    ['transformer.h.0.attn.c_proj.bias', 'attention'],
    ['transformer.h.0.attn.bias', 'attention'],
    ['transformer.h.0.mlp.c_proj.weight', 'mlp'],
    ['transformer.h.0.mlp.c_fc.weight', 'mlp'],
    ['model.layers.3.mlp.gate_proj.weight', 'mlp'],
    ['model.layers.3.mlp.down_proj.weight', 'mlp'],
    ['model.decoder.layers.1.fc2.weight', 'mlp'],
    ['model.embed_tokens.weight', 'embedding'],
    ['transformer.wte.weight', 'embedding'],
    ['transformer.wpe.weight', 'embedding'],
    ['task_embed.weight', 'embedding'],
    ['model.layers.0.input_layernorm.weight', 'norm'],
    ['model.norm.weight', 'norm'],
    ['transformer.ln_f.bias', 'norm'],
    ['lm_head.weight', 'head'],
    ['head.bias', 'head'],
    ['layers.0.weight', 'other'],
    ['scale', 'other'],
  ])('%s → %s', (name, module) => expect(moduleOf(name)).toBe(module));
});

describe('filterTensors', () => {
  const names = [
    'model.layers.0.self_attn.q_proj.weight',
    'model.layers.0.mlp.up_proj.weight',
    'model.layers.1.self_attn.q_proj.weight',
    'model.layers.10.mlp.up_proj.weight',
    'lm_head.weight',
  ].map((name) => ({ name }));
  const shown = (filter: Partial<TensorFilter>): string[] =>
    filterTensors(names, { ...NO_FILTER, ...filter }).map((t) => t.name);

  it('keeps everything, in order, without a filter', () => {
    expect(shown({})).toEqual(names.map((t) => t.name));
    expect(isFiltered(NO_FILTER)).toBe(false);
    expect(isFiltered({ ...NO_FILTER, text: '  ' })).toBe(false);
  });

  it('matches a name substring without regard to case or surrounding spaces', () => {
    expect(shown({ text: ' UP_proj ' })).toEqual([
      'model.layers.0.mlp.up_proj.weight',
      'model.layers.10.mlp.up_proj.weight',
    ]);
  });

  it('selects one layer exactly (layers.1 is not layers.10)', () => {
    expect(shown({ layer: 'layers.1' })).toEqual(['model.layers.1.self_attn.q_proj.weight']);
    expect(isFiltered({ ...NO_FILTER, layer: 'layers.1' })).toBe(true);
  });

  it('combines layer, module and text', () => {
    expect(shown({ layer: 'layers.0', module: 'mlp' })).toEqual(['model.layers.0.mlp.up_proj.weight']);
    expect(shown({ module: 'attention', text: 'layers.1.' })).toEqual([
      'model.layers.1.self_attn.q_proj.weight',
    ]);
    expect(shown({ module: 'head', layer: 'layers.0' })).toEqual([]);
  });
});

describe('expectedOutputBytes', () => {
  const merged = [
    { name: 'a', numel: 10, dtype: 'BF16' as const },
    { name: 'b', numel: 3, dtype: 'F32' as const },
  ];
  const base = [
    { name: 'a', bytes: 20 },
    { name: 'b', bytes: 12 },
    { name: 'position_ids', bytes: 64 },
  ];

  it('keeps each dtype, or converts every merged tensor, and copies the rest', () => {
    expect(expectedOutputBytes(merged, base, null)).toBe(20 + 12 + 64);
    expect(expectedOutputBytes(merged, base, 'F32')).toBe(40 + 12 + 64);
    expect(expectedOutputBytes(merged, base, 'F16')).toBe(20 + 6 + 64);
  });
});

/** Adds one to a counter that must exist. */
function bump(counts: number[], i: number): void {
  counts[i] = at(counts, i, 'counts') + 1;
}

/** Per-element agent sets at random, and the statistics' counts of them, counted here directly. */
function randomSets(agents: number, elements: number, seed: number) {
  const random = rng(seed);
  const density = Array.from({ length: agents }, () => 0.1 + 0.5 * random());
  const sets = new Map<number, number>();
  const stats = {
    agents,
    counts: new Array<number>(agents + 1).fill(0),
    overlap: Array.from({ length: agents }, () => new Array<number>(agents).fill(0)),
    unique: new Array<number>(agents).fill(0),
    pairs: Array.from({ length: agents }, () => new Array<number>(agents).fill(0)),
  };
  for (let i = 0; i < elements; i++) {
    let mask = 0;
    density.forEach((d, t) => {
      if (random() < d) mask |= 1 << t;
    });
    const members = setMembers(mask, agents);
    bump(stats.counts, members.length);
    if (mask === 0) continue;
    sets.set(mask, (sets.get(mask) ?? 0) + 1);
    for (const t of members) {
      bump(at(stats.overlap, t), members.length - 1);
      if (members.length === 1) bump(stats.unique, t);
      for (const u of members) bump(at(stats.pairs, t), u);
    }
  }
  return { stats, sets };
}

describe('agentSets', () => {
  it.each([1, 2, 3, 4])('recovers every exact agent set for N = %i from the counts and pairs', (agents) => {
    const { stats, sets } = randomSets(agents, 20000, 17 + agents);
    const derived = must(agentSets(stats), 'agent sets');
    for (let mask = 1; mask < 1 << agents; mask++) expect(derived.get(mask) ?? 0).toBe(sets.get(mask) ?? 0);
    expect(sets.size).toBe((1 << agents) - 1);
  });

  it.each([5, 8])('takes the per-set counts of the statistics for N = %i', (agents) => {
    const { stats, sets } = randomSets(agents, 20000, 40 + agents);
    const perSet = Array.from({ length: 2 ** agents }, (_, mask) => sets.get(mask) ?? 0);
    const derived = must(agentSets({ ...stats, sets: perSet }), 'agent sets');
    expect(derived.size).toBe(2 ** agents - 1);
    for (let mask = 1; mask < 1 << agents; mask++) expect(derived.get(mask)).toBe(sets.get(mask) ?? 0);
    // A per-set list for another number of agents is not taken.
    expect(agentSets({ ...stats, sets: perSet.slice(1) })).toBeNull();
  });

  it('is null where the counts do not fix the sets (N ≥ 5) or pairs are missing', () => {
    expect(agentSets(randomSets(5, 100, 3).stats)).toBeNull();
    expect(agentSets({ ...randomSets(3, 100, 3).stats, pairs: undefined })).toBeNull();
  });
});

describe('atlasOf', () => {
  const specs = llamaSpecs({ layers: 12, hidden: 64, vocab: 128, agents: 3, seed: 1 });
  const random = rng(99);
  const int = (n: number): number => Math.floor(random() * n);
  const tensors = specs.map((spec) => {
    const numel = spec.shape.reduce((a, b) => a * b, 1);
    const stats = emptyTensorStats(spec.name, 'BF16', numel, 3);
    stats.counts = stats.counts.map(() => int(numel));
    stats.overlap = stats.overlap.map((row) => row.map(() => int(numel)));
    stats.changed = stats.overlap.map((row) => row.reduce((a, b) => a + b, 0));
    stats.unique = stats.overlap.map((row) => at(row, 0));
    stats.signConflicts = int(numel);
    stats.pairs = must(stats.pairs, 'pairs').map((row) => row.map(() => int(numel)));
    return stats;
  });
  const atlas = atlasOf(tensors, 3);

  it('puts every tensor in exactly one cell, rows in model order, modules as a layer computes them', () => {
    const all = [...atlas.cells.values()].flatMap((c) => c.tensors);
    expect([...all].sort()).toEqual(specs.map((s) => s.name).sort());
    expect(atlas.rows).toEqual([
      'model.embed_tokens',
      ...Array.from({ length: 12 }, (_, l) => `layers.${l}`),
      'model.norm',
      'lm_head',
    ]);
    expect(atlas.modules).toEqual([
      'embed',
      'norm_in',
      'q',
      'k',
      'v',
      'o',
      'norm_post_attn',
      'gate',
      'up',
      'down',
      'norm',
      'head',
    ]);
    const q = atlas.cells.get(atlasKey('layers.7', 'q'));
    expect(q?.tensors).toEqual([
      'model.layers.7.self_attn.q_proj.weight',
      'model.layers.7.self_attn.q_proj.bias',
    ]);
  });

  it('sums integer counts per cell, and the ratios take their integers from the cell', () => {
    for (const cell of atlas.cells.values()) {
      const members = tensors.filter((t) => cell.tensors.includes(t.name));
      let numel = 0;
      let conflicts = 0;
      const changed = [0, 0, 0];
      const unique = [0, 0, 0];
      let both = 0;
      for (const m of members) {
        numel += m.numel;
        conflicts += m.signConflicts;
        both += at(at(must(m.pairs, 'pairs'), 1), 2);
        for (let t = 0; t < 3; t++) {
          changed[t] = at(changed, t) + at(m.changed, t);
          unique[t] = at(unique, t) + at(m.unique, t);
        }
      }
      expect(cell.stats.numel).toBe(numel);
      expect(atlasRatio(cell.stats, 'changed', 2, 0)).toEqual({ part: changed[2], whole: numel });
      expect(atlasRatio(cell.stats, 'unique', 0, 0)).toEqual({ part: unique[0], whole: changed[0] });
      expect(atlasRatio(cell.stats, 'sharedWith', 1, 2)).toEqual({ part: both, whole: changed[1] });
      expect(atlasRatio(cell.stats, 'conflicts', 1, 2)?.part).toBe(conflicts);
    }
  });
});

describe('overlapRatio', () => {
  it('is Jaccard over the union, or the share of the smaller agent', () => {
    expect(overlapRatio(30, 100, 50, 'jaccard')).toEqual({ part: 30, whole: 120 });
    expect(overlapRatio(30, 100, 50, 'smaller')).toEqual({ part: 30, whole: 50 });
  });
});

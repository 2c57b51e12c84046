// Scoring a merge before it is written gives the numbers of writing it and scoring the folder: the
// candidate's tensors are merged on request by the same engine and parameters as mergeModels uses.
// On the qwen2 fixture set (base + two agents) for a method of each kind: element-wise (RAM), global λ
// from the statistics (RAM+), a per-tensor counting pass (TIES), a random drop with l1 rescale (DARE)
// and an output dtype other than the base's.

import { describe, expect, it } from 'vitest';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import type { MergeEngine } from '../engine/contract.ts';
import type { TensorInput } from '../methods/tensors.ts';
import { EMBED, LM_HEAD, layerTensor } from './weights.ts';

const FIRST_LAYER_TENSOR = layerTensor(0, 'self_attn.q_proj.weight');
import { defaultParams } from '../methods/defaults.ts';
import type { MethodParams } from '../methods/types.ts';
import type { FloatDtype } from '../format/dtype.ts';
import type { CandidateRecipe } from './candidate.ts';
import { createCpuEvalBackend } from './cpu-backend.ts';
import { evaluate, type EvalModel } from './evaluate.ts';
import { evalModel } from './model.ts';
import {
  fixtureProbes,
  fixtureReference,
  openFixture,
  recordedTokenizer,
  sweptAndWritten,
} from '../test/eval-fixtures.ts';

const RECIPES: { label: string; params: MethodParams; outDtype?: FloatDtype }[] = [
  { label: 'ram', params: defaultParams('ram', 2) },
  { label: 'ramplus r=0.3', params: { ...defaultParams('ramplus', 2), r: 0.3 } },
  { label: 'ties 0.5', params: { ...defaultParams('ties', 2), density: [0.5, 0.5] } },
  {
    label: 'dare l1',
    params: { ...defaultParams('dare_ties', 2), density: [0.6, 0.6], rescale: 'l1' } as MethodParams,
  },
  { label: 'linear f32', params: defaultParams('linear', 2), outDtype: 'F32' },
];

describe('a candidate merge scores as its written folder does', () => {
  it('for every kind of method', async () => {
    const base = await openFixture('qwen2-set/base');
    const agents = [await openFixture('qwen2-set/agent-0'), await openFixture('qwen2-set/agent-1')];
    const reference = fixtureReference('qwen2-set/base');
    const probes = fixtureProbes(reference);
    const tokenizer = recordedTokenizer(reference);
    const engine = createCpuEngine({ agents: 2 });
    const baseModel = evalModel(base, 'base', 'base');
    const swept: EvalModel[] = [];
    const written: EvalModel[] = [];
    for (const recipe of RECIPES as CandidateRecipe[]) {
      const both = await sweptAndWritten(base, agents, engine, recipe);
      swept.push(both.swept);
      written.push(both.written);
    }
    const backend = createCpuEvalBackend();
    const options = { maxNewTokens: 3 };
    const a = await evaluate(backend, swept, probes, tokenizer, options);
    const b = await evaluate(backend, written, probes, tokenizer, options);
    expect(a.examples).toEqual(b.examples);
    expect(a.sets).toEqual(b.sets);
    // The candidates differ from each other and from the base: the merges were really made.
    const nll = a.sets[0]!.meanNll;
    expect(new Set(nll).size).toBe(nll.length);
    const plain = await evaluate(backend, [baseModel], probes, tokenizer, options);
    expect(nll).not.toContain(plain.sets[0]!.meanNll[0]);
  });

  it('reads a head larger than its block in one merge, cut into blocks as it streams', async () => {
    const base = await openFixture('qwen2-set/base');
    const agents = [await openFixture('qwen2-set/agent-0'), await openFixture('qwen2-set/agent-1')];
    const reference = fixtureReference('qwen2-set/base');
    const probes = fixtureProbes(reference);
    const tokenizer = recordedTokenizer(reference);
    const cpu = createCpuEngine({ agents: 2 });
    const merged: string[] = [];
    const engine: MergeEngine = Object.assign(Object.create(cpu) as MergeEngine, {
      merge: (input: TensorInput, options: Parameters<MergeEngine['merge']>[1]) => {
        merged.push(input.name);
        return cpu.merge(input, options);
      },
    });
    const { spec } = evalModel(base, 'base', 'base');
    const head = spec.tieEmbeddings ? EMBED : LM_HEAD;
    // A quarter of the budget holds a seventh of the head's rows (and one more): 7 blocks, the last short.
    const blockRows = Math.ceil(spec.vocab / 7) + 1;
    const memoryBudget = 4 * blockRows * spec.hidden * 4;
    const recipe = RECIPES[2] as CandidateRecipe;
    const { swept, written } = await sweptAndWritten(base, agents, engine, recipe);
    const backend = createCpuEvalBackend();
    merged.length = 0;
    const a = await evaluate(backend, [swept], probes, tokenizer, { memoryBudget });
    const headMerges = merged.filter((name) => name === head).length;
    const b = await evaluate(backend, [written], probes, tokenizer, { memoryBudget });
    expect(a.examples).toEqual(b.examples);
    // Once for the embedding rows of each batch where the head is the embedding, once per scoring:
    // never once per block.
    const batches = merged.filter((name) => name === FIRST_LAYER_TENSOR).length;
    expect(batches).toBeGreaterThan(0);
    expect(headMerges).toBe(batches * (spec.tieEmbeddings ? 2 : 1));
  });
});

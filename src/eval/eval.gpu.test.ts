// The WGSL forward pass end to end: on every fixture family (GQA, llama3 and linear rope, Mistral's
// window, Qwen2's biases and tied head, Qwen3's q/k norms; F32, BF16 and F16 weights) the GPU's NLL,
// top-1 counts and greedy ids equal transformers' f32 forward (NLL within 1e-4 relative, ids equal but
// at recorded near-ties), and a candidate merge scored on the GPU gives the numbers of the merge
// written by the GPU engine and scored from its folder.

import { afterAll, describe, expect, it } from 'vitest';
import { createGpuEngine } from '../engine/gpu/gpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { openGpuHarness } from '../test/gpu-harness.ts';
import {
  EVAL_FIXTURE_MODELS,
  fixtureProbes,
  fixtureReference,
  openFixture,
  recordedTokenizer,
  referenceMismatches,
  sweptAndWritten,
} from '../test/eval-fixtures.ts';
import { evaluate } from './evaluate.ts';
import { createGpuEvalBackend } from './gpu/gpu-backend.ts';
import { evalModel } from './model.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

describe.skipIf(!harness)(`the WGSL forward pass = transformers ${opened.skip ?? ''}`, () => {
  it.each(EVAL_FIXTURE_MODELS)('%s', async (name) => {
    const reference = fixtureReference(name);
    const model = evalModel(await openFixture(name), name, name);
    await harness!.run(async () => {
      const backend = createGpuEvalBackend(harness!.device);
      try {
        // Chat on each family (the set's agents are Qwen2 again), its first generated tokens only:
        // each token is a whole forward pass on SwiftShader.
        const modes = name.includes('/') ? (['plain'] as const) : (['plain', 'chat'] as const);
        for (const mode of modes) {
          const result = await evaluate(
            backend,
            [model],
            fixtureProbes(reference),
            recordedTokenizer(reference),
            {
              chat: mode === 'chat',
              maxNewTokens: mode === 'plain' ? reference.maxNewTokens : 2,
            },
          );
          expect(
            referenceMismatches(result, 0, reference, mode, 1e-4, mode === 'plain' ? Infinity : 2),
          ).toEqual([]);
        }
      } finally {
        backend.destroy();
      }
    });
    expect(harness!.liveBuffers()).toEqual([]);
  });

  it('scores a candidate merge as the folder the GPU engine writes', async () => {
    const base = await openFixture('qwen2-set/base');
    const agents = [await openFixture('qwen2-set/agent-0'), await openFixture('qwen2-set/agent-1')];
    const reference = fixtureReference('qwen2-set/base');
    await harness!.run(async () => {
      const engine = createGpuEngine(harness!.device, {
        agents: 2,
        adapterDescription: harness!.adapterDescription,
      });
      const backend = createGpuEvalBackend(harness!.device);
      try {
        const recipes = [
          { label: 'ramplus', params: { ...defaultParams('ramplus', 2), r: 0.3 } },
          { label: 'ties', params: { ...defaultParams('ties', 2), density: [0.5, 0.5] } },
        ];
        const swept = [];
        const written = [];
        for (const recipe of recipes) {
          const both = await sweptAndWritten(base, agents, engine, recipe);
          swept.push(both.swept);
          written.push(both.written);
        }
        const probes = fixtureProbes(reference);
        const tokenizer = recordedTokenizer(reference);
        const a = await evaluate(backend, swept, probes, tokenizer, { maxNewTokens: 2 });
        const b = await evaluate(backend, written, probes, tokenizer, { maxNewTokens: 2 });
        expect(a.examples).toEqual(b.examples);
        expect(a.sets).toEqual(b.sets);
        expect(a.sets[0]!.meanNll[0]).not.toBe(a.sets[0]!.meanNll[1]);
      } finally {
        backend.destroy();
        engine.destroy();
      }
    });
  });
});

// The forward pass as the f64 CPU reference computes it equals transformers' own forward on every
// fixture family (llama with GQA, llama3 and linear rope, Mistral's sliding window, Qwen2's biases and
// tied head, Qwen3's q/k norms; F32, BF16 and F16 storage): NLL, top-1 counts and greedy ids.

import { describe, expect, it } from 'vitest';
import { createCpuEvalBackend } from './cpu-backend.ts';
import { evaluate } from './evaluate.ts';
import { evalModel } from './model.ts';
import {
  EVAL_FIXTURE_MODELS,
  fixtureProbes,
  fixtureReference,
  openFixture,
  recordedTokenizer,
  referenceMismatches,
} from '../test/eval-fixtures.ts';

describe('evaluate on the CPU reference = transformers', () => {
  it.each(EVAL_FIXTURE_MODELS)('%s', async (name) => {
    const reference = fixtureReference(name);
    const model = evalModel(await openFixture(name), name, name);
    expect(model.spec.architecture).toBe(reference.architecture);
    const backend = createCpuEvalBackend();
    for (const mode of ['plain', 'chat'] as const) {
      const result = await evaluate(
        backend,
        [model],
        fixtureProbes(reference),
        recordedTokenizer(reference),
        {
          chat: mode === 'chat',
          maxNewTokens: reference.maxNewTokens,
        },
      );
      expect(referenceMismatches(result, 0, reference, mode, 1e-4)).toEqual([]);
      // Every example scored and generated for the one model.
      expect(result.examples.every((e) => e.nll.length === 1 && Number.isFinite(e.nll[0]))).toBe(true);
    }
  });

  it('shares the tokens of one call between models and sums the sets', async () => {
    const names = ['qwen2-set/base', 'qwen2-set/agent-0'] as const;
    const reference = fixtureReference(names[0]);
    const models = await Promise.all(names.map(async (n) => evalModel(await openFixture(n), n, n)));
    const result = await evaluate(
      createCpuEvalBackend(),
      models,
      fixtureProbes(reference),
      recordedTokenizer(reference),
    );
    expect(result.models.map((m) => m.label)).toEqual([...names]);
    for (const [m, name] of names.entries())
      expect(
        referenceMismatches(result, m, fixtureReference(name), 'plain', 1e-4).filter(
          (p) => !p.includes('generated'),
        ),
      ).toEqual([]);
    for (const set of result.sets) {
      const members = result.examples.filter((e) => e.set === set.set);
      expect(set.tokens).toBe(members.reduce((n, e) => n + e.completionTokens, 0));
      for (let m = 0; m < 2; m++)
        expect(set.meanNll[m]).toBeCloseTo(members.reduce((s, e) => s + e.nll[m]!, 0) / set.tokens, 12);
    }
  });
});

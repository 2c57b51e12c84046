// A merge of LoRA agents written as one PEFT adapter: the folder, opened as an agent again and merged
// alone (task arithmetic, weight 1, λ 1), equals the merge of the agents themselves (task arithmetic
// and normalised linear) to the f32 rounding of the products; methods that are not a weighted sum of
// τ, and agents that carry more than B·A (DoRA, modules_to_save, lora_bias), are refused by name.
// (PEFT itself loads such a folder: scripts/lora-fixtures.py's merge of it matched to 6e-8.)
import { describe, expect, it } from 'vitest';
import { openModel, type Model } from '../format/model.ts';
import { memoryFolder } from '../io/sink.ts';
import { memorySource } from '../io/source.ts';
import { must } from '../io/checked.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { lowRankF32 } from '../methods/lora.ts';
import type { MethodParams } from '../methods/types.ts';
import { fixtureAgent, fixtureModel, outside, tensorValues } from '../test/lora.ts';
import { openAdapterAgent } from './adapter-model.ts';
import { ADAPTER_METHODS_NOTE, writeAdapterMerge } from './adapter-out.ts';
import { mergeModels } from './driver.ts';

async function merged(base: Model, agents: Model[], params: MethodParams): Promise<Model> {
  const out = memoryFolder('out');
  await mergeModels({
    base,
    agents,
    engine: createCpuEngine({ agents: agents.length }),
    params,
    outDtype: 'F32',
    out,
    baseLabel: 'base',
    agentLabels: agents.map((a) => a.name),
  });
  return openModel(
    'out',
    [...out.files].map(([name, bytes]) => ({ name, source: memorySource(name, bytes) })),
  );
}

async function asAdapter(base: Model, agents: Model[], params: MethodParams): Promise<Model> {
  const out = memoryFolder('adapter');
  const files = await writeAdapterMerge({ base, agents, params, baseModel: 'llama-base', out });
  expect(files.map((f) => f.file)).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
  return openAdapterAgent(
    'merged-adapter',
    [...out.files].map(([name, bytes]) => ({ name, source: memorySource(name, bytes) })),
    base,
    { product: () => lowRankF32 },
  );
}

const ulp = (x: number): number => 2 ** Math.max(Math.floor(Math.log2(Math.abs(x) || 2 ** -149)) - 23, -149);

describe('LoRA agents merged into one LoRA adapter', () => {
  for (const params of [
    { ...defaultParams('task_arithmetic', 2), weights: [0.7, 0.5], lambda: 0.9 },
    { ...defaultParams('task_arithmetic', 2), weights: [0.7, 0.5], normalize: true },
    { ...defaultParams('linear', 2), weights: [2, 1] },
  ]) {
    it(`${params.method}${params.normalize ? ' (normalised)' : ''} equals the merge of the agents`, async () => {
      const base = await fixtureModel('llama-base');
      const agents = await Promise.all(
        ['lora', 'rslora-patterns'].map((n) => fixtureAgent(n, base, lowRankF32)),
      );
      const adapter = await asAdapter(base, agents, params);
      const alone = { ...defaultParams('task_arithmetic', 1), weights: [1], lambda: 1 };
      const fromAdapter = await merged(base, [adapter], alone);
      const direct = await merged(base, agents, params);
      const bad: string[] = [];
      for (const t of base.tensors.values()) {
        const want = await tensorValues(direct, t.name);
        const w = await tensorValues(base, t.name);
        // Relative to the largest |τ| of the tensor: the products' f32 rounding at rank ≤ 10.
        const scale = want.reduce((m, v, e) => Math.max(m, Math.abs(v - (w[e] ?? 0))), 0);
        const bound = want.map((v) => 16 * 2 ** -24 * scale + 2 * ulp(v));
        bad.push(...outside(t.name, await tensorValues(fromAdapter, t.name), want, bound));
      }
      expect(bad).toEqual([]);
    });
  }

  it('concatenates the ranks per module, at scaling 1', async () => {
    const base = await fixtureModel('llama-base');
    const agents = await Promise.all(
      ['lora', 'rslora-patterns'].map((n) => fixtureAgent(n, base, lowRankF32)),
    );
    const adapter = await asAdapter(base, agents, defaultParams('task_arithmetic', 2));
    const file = must(
      adapter.files.find((f) => f.name === 'adapter_config.json'),
      'adapter_config.json',
    );
    const config = JSON.parse(new TextDecoder().decode(await file.source.read(0, file.source.size))) as {
      r: number;
      lora_alpha: number;
      rank_pattern: Record<string, number>;
      target_modules: string[];
    };
    // q_proj of layer 1: 4 (lora) + 6 (rslora's rank_pattern); v_proj: 4 + 2.
    expect(config.rank_pattern['model\\.layers\\.1\\.self_attn\\.q_proj']).toBe(10);
    expect(config.rank_pattern['model\\.layers\\.0\\.self_attn\\.v_proj']).toBe(6);
    expect(config.r).toBe(config.lora_alpha);
    expect(config.target_modules).toHaveLength(14);
  });

  it('refuses a method that is not a weighted sum of τ, and agents with more than B·A', async () => {
    const base = await fixtureModel('llama-base');
    const lora = await fixtureAgent('lora', base, lowRankF32);
    const out = memoryFolder('x');
    const job = (agents: Model[], params: MethodParams) =>
      writeAdapterMerge({ base, agents, params, baseModel: 'b', out });
    await expect(job([lora, lora], defaultParams('ties', 2))).rejects.toThrow(
      `ties cannot be written as a LoRA adapter: ${ADAPTER_METHODS_NOTE}`,
    );
    await expect(job([lora, lora], { ...defaultParams('linear', 2), normalize: false })).rejects.toThrow(
      /a LoRA cannot scale the base \(Σ w = 2\)/,
    );
    for (const [name, message] of [
      ['dora', /is DoRA/],
      ['modules-to-save', /replaces lm_head\.weight/],
      ['embedding', /replaces model\.embed_tokens\.weight/],
    ] as const)
      await expect(
        job([lora, await fixtureAgent(name, base, lowRankF32)], defaultParams('task_arithmetic', 2)),
      ).rejects.toThrow(message);
    await expect(job([lora, base], defaultParams('task_arithmetic', 2))).rejects.toThrow(
      /llama-base is not a LoRA adapter/,
    );
  });
});

// LoRA adapters as agents on the CPU engine, against PEFT (scripts/lora-fixtures.py): a
// task-arithmetic merge of one adapter alone (weight 1, λ 1, f32 out) over its f32 base equals PEFT's
// merge_and_unload() to f32 rounding of the product, for plain LoRA, rsLoRA with rank and alpha
// patterns, an embedding adapter with a stored base layer, modules_to_save, DoRA, fan_in_fan_out with
// trained biases and lora_bias; tensors no module touches are the base's bits. RAM and TIES of three
// LoRA agents equal the f64 reference on the agents as materialised.
import { describe, expect, it } from 'vitest';
import { encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { openModel, type Model } from '../format/model.ts';
import { memoryFolder } from '../io/sink.ts';
import { memorySource } from '../io/source.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { lowRankF32 } from '../methods/lora.ts';
import { referenceMerge } from '../methods/reference.ts';
import { ramLambdas } from '../methods/stats.ts';
import type { MethodName } from '../methods/types.ts';
import {
  fixtureAgent,
  fixtureModel,
  fixturePlan,
  LORA_ADAPTERS,
  outside,
  peftBound,
  tensorValues,
} from '../test/lora.ts';
import { testParams } from '../test/tensors.ts';
import { analyzeModels, mergeModels } from './driver.ts';
import { adapterLines } from './precision-stats.ts';

async function mergeToModel(
  base: Model,
  agents: Model[],
  method: MethodName,
  params = testParams(method, agents.length, 5),
  outDtype?: FloatDtype,
): Promise<Model> {
  const out = memoryFolder('out');
  await mergeModels({
    base,
    agents,
    engine: createCpuEngine({ agents: agents.length, maxWindowElements: 50 }),
    params,
    outDtype,
    out,
    baseLabel: 'base',
    agentLabels: agents.map((a) => a.name),
  });
  return openModel(
    'out',
    [...out.files].map(([name, bytes]) => ({ name, source: memorySource(name, bytes) })),
  );
}

describe('a LoRA adapter alone, merged with task arithmetic, is PEFT’s merge_and_unload()', () => {
  for (const [name, kind] of Object.entries(LORA_ADAPTERS)) {
    it(name, async () => {
      const base = await fixtureModel(`${kind}-base`);
      const agent = await fixtureAgent(name, base, lowRankF32);
      const params = { ...defaultParams('task_arithmetic', 1), weights: [1], lambda: 1 };
      const merged = await mergeToModel(base, [agent], 'task_arithmetic', params, 'F32');
      const peft = await fixtureModel(`${name}.merged`);
      const { plan, adapter } = await fixturePlan(name, base);
      const bad: string[] = [];
      let changed = 0;
      for (const t of peft.tensors.values()) {
        const want = await tensorValues(peft, t.name);
        const got = await tensorValues(merged, t.name);
        const weight = await tensorValues(base, t.name);
        if (want.some((v, e) => v !== weight[e])) changed++;
        bad.push(...outside(t.name, got, want, await peftBound(plan, adapter, t.name, want, weight)));
      }
      expect(bad).toEqual([]);
      // The adapter changes what its plan says, and nothing else.
      expect(changed).toBe(
        new Set([...plan.modules.keys(), ...plan.replaced.keys(), ...plan.biases.keys()]).size,
      );
    });
  }
});

describe('three LoRA agents', () => {
  for (const method of ['ram', 'ramplus', 'ties', 'task_arithmetic'] as const) {
    it(`${method} equals the f64 reference on the materialised agents`, async () => {
      const base = await fixtureModel('llama-base');
      const agents = await Promise.all(
        ['lora', 'rslora-patterns', 'dora'].map((n) => fixtureAgent(n, base, lowRankF32)),
      );
      const params = testParams(method, 3, 5);
      const merged = await mergeToModel(base, agents, method, params);
      let lambdas = [1, 1, 1];
      if (method === 'ramplus') {
        const analysis = await analyzeModels({
          base,
          agents,
          engine: createCpuEngine({ agents: 3 }),
          epsilon: params.epsilon,
        });
        lambdas = ramLambdas(analysis.totals, method, params.r, params.alpha);
      }
      for (const t of base.tensors.values()) {
        const want = referenceMerge(
          {
            name: t.name,
            dtype: 'F32',
            shape: t.shape,
            base: await tensorValues(base, t.name),
            agents: await Promise.all(agents.map((a) => tensorValues(a, t.name))),
          },
          params,
          lambdas,
        );
        const out = merged.tensors.get(t.name);
        expect(out && (await merged.source(out.file).read(out.offset, out.end - out.begin)), t.name).toEqual(
          encodeFloats('F32', want),
        );
      }
    });
  }

  it('a LoRA’s τ is dense in its target modules, zero elsewhere', async () => {
    const base = await fixtureModel('llama-base');
    const agent = await fixtureAgent('lora', base, lowRankF32);
    const analysis = await analyzeModels({
      base,
      agents: [agent],
      engine: createCpuEngine({ agents: 1 }),
      epsilon: 0,
    });
    const { plan } = await fixturePlan('lora', base);
    for (const t of analysis.tensors)
      expect(t.changed[0], t.name).toBe(plan.modules.has(t.name) ? t.numel : 0);
    expect(adapterLines([agent], analysis, ['coder'])).toEqual([
      'coder is a LoRA adapter: its τ is dense in the 6 tensors it adapts (100.0% of their elements changed) and ' +
        'zero elsewhere, so RAM counts every element of its target modules as its change, shared wherever another ' +
        'agent adapts them too.',
    ]);
  });
});

describe('a LoRA agent over a bf16 base', () => {
  it('is read at bf16 by default: θ₀ + τ computed in f32, then rounded', async () => {
    const f32 = await fixtureModel('llama-base');
    const agent = await fixtureAgent('lora', f32, lowRankF32);
    const name = 'model.layers.0.self_attn.q_proj.weight';
    const values = await tensorValues(agent, name);
    expect(agent.tensors.get(name)?.dtype).toBe('F32');
    expect(agent.tensors.get('model.norm.weight')?.file).toBe('base:model.safetensors');
    expect(values).not.toEqual(await tensorValues(f32, name));
    // The bytes the driver hands the engine are those of the same values stored in bf16.
    const { tensorInput } = await import('./driver.ts');
    const bf16 = await openModel('bf16', [
      {
        name: 'model.safetensors',
        source: memorySource(
          'model.safetensors',
          (await import('../format/write.ts')).serializeSafetensors(
            await Promise.all(
              [...f32.tensors.values()].map(async (t) => ({
                name: t.name,
                dtype: 'BF16' as const,
                shape: t.shape,
                data: encodeFloats('BF16', await tensorValues(f32, t.name)),
              })),
            ),
          ),
        ),
      },
    ]);
    const overBf16 = await fixtureAgent('lora', bf16, lowRankF32);
    const input = tensorInput([bf16, overBf16], name);
    expect(input.dtype).toBe('BF16');
    const bytes = new Uint8Array(input.numel * 2);
    await input.read(1, 0, input.numel, bytes);
    expect(bytes).toEqual(encodeFloats('BF16', await tensorValues(overBf16, name)));
  });
});

// LoRA adapters as agents on the GPU engine, τ materialised by its low-rank kernel in windows smaller
// than a tensor: one adapter alone under task arithmetic equals PEFT's merge_and_unload() to f32
// rounding of the product, for every fixture; and RAM, RAM+ and TIES of three LoRA agents equal the
// same engine's merge of the agents materialised whole into memory (the conformance table holds the
// GPU to the f64 reference on such uniform sets), whose values are within the product's rounding of
// the CPU's.
import { afterAll, describe, expect, it } from 'vitest';
import { encodeFloats } from '../format/dtype.ts';
import { openModel, type Model } from '../format/model.ts';
import { memoryFolder } from '../io/sink.ts';
import { memorySource } from '../io/source.ts';
import type { MergeEngine } from '../engine/contract.ts';
import { createGpuEngine } from '../engine/gpu/gpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { lowRankF32 } from '../methods/lora.ts';
import type { MethodName, MethodParams } from '../methods/types.ts';
import { memoryModel } from '../test/fixtures.ts';
import { openGpuHarness } from '../test/gpu-harness.ts';
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
import { mergeModels } from './driver.ts';

const { harness } = await openGpuHarness();
afterAll(() => harness?.close());

const gpu = (agents: number): MergeEngine =>
  createGpuEngine(harness!.device, {
    agents,
    adapterDescription: harness!.adapterDescription,
    maxWindowElements: 100,
    poisonOutput: true,
  });

async function merged(
  engine: MergeEngine,
  base: Model,
  agents: Model[],
  params: MethodParams,
): Promise<Model> {
  const out = memoryFolder('out');
  await mergeModels({
    base,
    agents,
    engine,
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

/** The agent's every tensor read whole, as an in-memory f32 model. */
async function materialised(agent: Model): Promise<Model> {
  return memoryModel(
    `${agent.name}.whole`,
    await Promise.all(
      [...agent.tensors.values()].map(async (t) => ({
        name: t.name,
        dtype: 'F32' as const,
        shape: [...t.shape],
        data: encodeFloats('F32', await tensorValues(agent, t.name)),
      })),
    ),
  );
}

describe.skipIf(!harness)('LoRA agents on the GPU', () => {
  for (const [name, kind] of Object.entries(LORA_ADAPTERS)) {
    it(`${name}: task arithmetic of the adapter alone is PEFT’s merge_and_unload()`, async () => {
      const base = await fixtureModel(`${kind}-base`);
      const engine = gpu(1);
      try {
        const product = engine.product!;
        const agent = await fixtureAgent(name, base, product);
        const params = { ...defaultParams('task_arithmetic', 1), weights: [1], lambda: 1 };
        const out = await harness!.run(() => merged(engine, base, [agent], params));
        const peft = await fixtureModel(`${name}.merged`);
        const { plan, adapter } = await fixturePlan(name, base);
        const bad: string[] = [];
        for (const t of peft.tensors.values()) {
          const want = await tensorValues(peft, t.name);
          const weight = await tensorValues(base, t.name);
          bad.push(
            ...outside(
              t.name,
              await tensorValues(out, t.name),
              want,
              await peftBound(plan, adapter, t.name, want, weight),
            ),
          );
        }
        expect(bad).toEqual([]);
      } finally {
        engine.destroy();
      }
      expect(harness!.liveBuffers()).toEqual([]);
    });
  }

  for (const method of ['ram', 'ramplus', 'ties'] as MethodName[]) {
    it(`${method} of three LoRA agents equals the merge of the agents materialised whole`, async () => {
      const base = await fixtureModel('llama-base');
      const names = ['lora', 'rslora-patterns', 'dora'];
      const params = testParams(method, 3, 5);
      const engine = gpu(3);
      try {
        const agents = await Promise.all(names.map((n) => fixtureAgent(n, base, engine.product!)));
        const whole = await Promise.all(agents.map(materialised));
        const streamed = await harness!.run(() => merged(engine, base, agents, params));
        const inMemory = await harness!.run(() => merged(engine, base, whole, params));
        for (const t of base.tensors.values())
          expect(await tensorValues(streamed, t.name), t.name).toEqual(await tensorValues(inMemory, t.name));
        // The GPU product's agents are the CPU's, to the product's f32 rounding.
        for (const [i, n] of names.entries()) {
          const cpu = await fixtureAgent(n, base, lowRankF32);
          const { plan, adapter } = await fixturePlan(n, base);
          for (const t of base.tensors.values()) {
            const want = await tensorValues(cpu, t.name);
            const bound = await peftBound(plan, adapter, t.name, want, await tensorValues(base, t.name));
            expect(outside(t.name, await tensorValues(whole[i]!, t.name), want, bound)).toEqual([]);
          }
        }
      } finally {
        engine.destroy();
      }
      expect(harness!.liveBuffers()).toEqual([]);
    });
  }
});

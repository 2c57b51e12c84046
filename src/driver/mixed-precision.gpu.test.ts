// f32 agents over a bf16 / f16 base on the GPU engine, in windows smaller than a tensor: every method
// equals the same engine on the set stored at the base's dtypes by default, and on the set stored all
// in f32 with `stored` (the conformance table holds the GPU to the f64 reference on uniform sets);
// the statistics equal the CPU engine's at every read precision.
import { afterAll, describe, expect, it } from 'vitest';
import type { FloatDtype } from '../format/dtype.ts';
import type { Model } from '../format/model.ts';
import type { ReadDtype } from '../format/precision.ts';
import { memoryFolder } from '../io/sink.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import type { MergeEngine } from '../engine/contract.ts';
import { createGpuEngine } from '../engine/gpu/gpu-engine.ts';
import { METHOD_LIST } from '../methods/registry/index.ts';
import type { MethodName } from '../methods/types.ts';
import { openGpuHarness } from '../test/gpu-harness.ts';
import { mixedSet } from '../test/mixed-precision.ts';
import { testParams } from '../test/tensors.ts';
import { analyzeModels, mergeModels } from './driver.ts';

const { harness } = await openGpuHarness();
afterAll(() => harness?.close());

const gpu = (agents: number): MergeEngine =>
  createGpuEngine(harness!.device, {
    agents,
    adapterDescription: harness!.adapterDescription,
    maxWindowElements: 48,
    poisonOutput: true,
  });

async function merged(
  engine: MergeEngine,
  base: Model,
  agents: Model[],
  method: MethodName,
  readDtype?: ReadDtype,
  outDtype?: FloatDtype,
): Promise<Map<string, Uint8Array>> {
  const out = memoryFolder('out');
  try {
    await mergeModels({
      base,
      agents,
      engine,
      params: testParams(method, agents.length, 11),
      readDtype,
      outDtype,
      out,
      baseLabel: 'base',
      agentLabels: agents.map((a) => a.name),
    });
  } finally {
    engine.destroy();
  }
  // The card names the engine: compare the tensors' files.
  return new Map([...out.files].filter(([name]) => name.endsWith('.safetensors')));
}

describe.skipIf(!harness)('f32 agents over a bf16 base, on the GPU', () => {
  for (const { name: method } of METHOD_LIST) {
    const wide = method === 'slerp' ? [true] : [true, false, true];
    it(`${method}: equals the set stored at the base's dtypes by default, all in f32 with "stored"`, async () => {
      const set = await mixedSet(method.length * 7 + 1, wide);
      const n = wide.length;
      await harness!.run(async () => {
        expect(await merged(gpu(n), set.base, set.agents, method), 'default').toEqual(
          await merged(gpu(n), set.base, set.rounded, method),
        );
        expect(await merged(gpu(n), set.base, set.agents, method, 'stored', 'F32'), 'stored').toEqual(
          await merged(gpu(n), set.widened.base, set.widened.agents, method, undefined, 'F32'),
        );
      });
      expect(harness!.liveBuffers()).toEqual([]);
    });
  }

  it('statistics equal the CPU engine’s at every read precision', async () => {
    const set = await mixedSet(5, [true, true, false]);
    await harness!.run(async () => {
      for (const readDtype of [undefined, 'stored', 'BF16', 'F16', 'F32'] as const) {
        const engine = gpu(3);
        const job = { base: set.base, agents: set.agents, epsilon: 1e-5, readDtype };
        try {
          expect(await analyzeModels({ ...job, engine }), readDtype).toEqual(
            await analyzeModels({ ...job, engine: createCpuEngine({ agents: 3 }) }),
          );
        } finally {
          engine.destroy();
        }
      }
    });
  });
});

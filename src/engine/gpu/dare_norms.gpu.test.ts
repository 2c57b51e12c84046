// DARE with mergekit's L1 rescale on the GPU: the norms pre-pass (shaders/dare_norms.wgsl, partial sums
// per workgroup added in f64) feeds per-agent factors to the DARE kernels. Checked against the f64 CPU
// reference on fresh seeded inputs, over one window and over many, and against 1/density to show the
// factors are really applied.
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFloats, type FloatDtype } from '../../format/dtype.ts';
import { ulpOf } from '../../methods/float32.ts';
import { referenceMerge } from '../../methods/reference.ts';
import { mergeBytes, randomTensor, testParams } from '../../test/tensors.ts';
import type { MethodParams } from '../../methods/types.ts';
import { createGpuEngine } from './gpu-engine.ts';
import { openGpuHarness } from '../../test/gpu-harness.ts';
import type { MergeEngine } from '../contract.ts';
import type { TensorInput } from '../../methods/tensors.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

async function merged(engine: MergeEngine, input: TensorInput, params: MethodParams, out: FloatDtype) {
  return decodeFloats(
    out,
    await mergeBytes(engine, input, { params, lambdas: [], outDtype: out }),
    input.numel,
  );
}

const CONFIGS = [
  { dtype: 'BF16' as const, out: 'BF16' as const, agents: 3, numel: 40_001, window: 7_000 },
  { dtype: 'F32' as const, out: 'F32' as const, agents: 2, numel: 20_000, window: undefined },
];

describe.skipIf(!harness)(`DARE L1 rescale on the GPU ${opened.skip ?? ''}`, () => {
  for (const method of ['dare_linear', 'dare_ties'] as const)
    it.each(CONFIGS)(`${method}: $dtype→$out, N=$agents, $numel elements, window $window`, async (config) => {
      const t = randomTensor({ name: `model.layers.1.${method}`, ...config, seed: 77 + config.agents });
      const params: MethodParams = {
        ...testParams(method, config.agents, 9),
        density: [0.3, 0.6, 0.9].slice(0, config.agents),
        rescale: 'l1',
      };
      const engine = createGpuEngine(harness!.device, {
        agents: config.agents,
        adapterDescription: harness!.adapterDescription,
        maxWindowElements: config.window,
      });
      try {
        const got = await harness!.run(() => merged(engine, t.input, params, config.out));
        const want = referenceMerge(t.values, params, []);
        const paper = referenceMerge(t.values, { ...params, rescale: 'density' }, []);
        let far = 0;
        let differsFromPaper = 0;
        want.forEach((w, i) => {
          let magnitude = Math.abs(w);
          for (const a of t.values.agents) magnitude = Math.max(magnitude, Math.abs(a[i]!) * 4);
          const allowed = ulpOf(Math.fround(w), config.out) + 16 * ulpOf(Math.fround(magnitude), 'F32');
          if (!(Math.abs(got[i]! - w) <= allowed)) far++;
          if (Math.abs(paper[i]! - w) > allowed) differsFromPaper++;
        });
        expect(far).toBe(0);
        expect(differsFromPaper).toBeGreaterThan(config.numel / 100);
      } finally {
        engine.destroy();
      }
    });
});

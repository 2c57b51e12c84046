// DELLA on the GPU (shaders/della_mask.wgsl's bitonic rank per group, then the TIES kernel): against
// the f64 CPU reference on fresh seeded inputs, with every rescale rule, rows of 2-D tensors and
// dimension-1 groups of 3-D ones, one window and many; the branch counts (which agents each element
// kept) must equal the reference's exactly, so every keep decision is the CPU's.
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFloats, type FloatDtype } from '../../format/dtype.ts';
import { ulpOf } from '../../methods/float32.ts';
import { referenceBranches, referenceMerge } from '../../methods/reference.ts';
import { emptyBranchCounts } from '../../methods/tensors.ts';
import { mergeBytes, randomTensor, testParams } from '../../test/tensors.ts';
import type { MethodParams } from '../../methods/types.ts';
import { createGpuEngine } from './gpu-engine.ts';
import { openGpuHarness } from '../../test/gpu-harness.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const CONFIGS = [
  { dtype: 'BF16' as FloatDtype, out: 'BF16' as FloatDtype, agents: 3, shape: [40, 129], window: 1000 },
  { dtype: 'F32' as FloatDtype, out: 'F32' as FloatDtype, agents: 2, shape: [6, 37, 5], window: 500 },
  { dtype: 'F16' as FloatDtype, out: 'F32' as FloatDtype, agents: 4, shape: [3001], window: undefined },
  // One row longer than the window: the window grows to hold it.
  { dtype: 'BF16' as FloatDtype, out: 'F32' as FloatDtype, agents: 2, shape: [2, 700], window: 300 },
];

describe.skipIf(!harness)(`DELLA on the GPU ${opened.skip ?? ''}`, () => {
  for (const method of ['della', 'della_linear'] as const)
    for (const rescale of ['density', 'l1', 'none'] as const)
      it.each(CONFIGS)(
        `${method} (${rescale}): $dtype→$out, N=$agents, shape $shape, window $window`,
        async (config) => {
          const numel = config.shape.reduce((a, b) => a * b, 1);
          const t = randomTensor({
            name: `model.layers.4.${method}`,
            ...config,
            numel,
            seed: numel + config.agents,
          });
          const input = { ...t.input, shape: config.shape };
          const values = { ...t.values, shape: config.shape };
          const params: MethodParams = { ...testParams(method, config.agents, 31), rescale };
          const engine = createGpuEngine(harness!.device, {
            agents: config.agents,
            adapterDescription: harness!.adapterDescription,
            maxWindowElements: config.window,
            poisonOutput: true,
          });
          try {
            const branches = emptyBranchCounts(config.agents);
            const bytes = await harness!.run(() =>
              mergeBytes(engine, input, { params, lambdas: [], outDtype: config.out, branches }),
            );
            const got = decodeFloats(config.out, bytes, numel);
            const want = referenceMerge(values, params, []);
            expect(branches).toEqual(referenceBranches(values, params));
            const lowest = Math.min(...params.density.map((d, i) => d - params.dellaEpsilon![i]!));
            let far = 0;
            want.forEach((w, i) => {
              let magnitude = Math.max(Math.abs(w), Math.abs(values.base[i]!));
              for (const a of values.agents) magnitude = Math.max(magnitude, Math.abs(a[i]!));
              const allowed =
                ulpOf(Math.fround(w), config.out) + 8 * ulpOf(Math.fround((4 * magnitude) / lowest), 'F32');
              if (!(Math.abs(got[i]! - w) <= allowed)) far++;
            });
            expect(far).toBe(0);
            // The groups matter: ranked as one row of the whole tensor, the reference keeps other entries.
            // (Under 1/p every entry's own p shows in its value, so a different rank shows.)
            if (config.shape.length > 1 && rescale === 'density') {
              const flat = referenceMerge({ ...values, shape: [numel] }, params, []);
              expect(flat.some((x, k) => x !== want[k])).toBe(true);
            }
          } finally {
            engine.destroy();
          }
        },
      );

  it('refuses density ± ε outside (0, 1), naming the agent', async () => {
    const t = randomTensor({ name: 'della.bad', dtype: 'F32', numel: 100, agents: 2, seed: 1 });
    const engine = createGpuEngine(harness!.device, { agents: 2, adapterDescription: 'test' });
    try {
      const params = { ...testParams('della', 2, 1), density: [0.5, 0.9], dellaEpsilon: [0.1, 0.1] };
      await expect(
        harness!.run(() => mergeBytes(engine, t.input, { params, lambdas: [], outDtype: 'F32' })),
      ).rejects.toThrow(/agent 2: density ± dellaEpsilon must lie inside \(0, 1\)/);
    } finally {
      engine.destroy();
    }
  });
});

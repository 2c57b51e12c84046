import { describe, expect, it } from 'vitest';
import { encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { EngineTensorError } from './contract.ts';
import { createCpuEngine } from './cpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { referenceMerge, referenceStats } from '../methods/reference.ts';
import { mergeBytes, randomTensor, testParams } from '../test/tensors.ts';
import { METHODS, type MethodName, type MethodParams } from '../methods/types.ts';

const paramsFor = (method: MethodName, agents: number): MethodParams => testParams(method, agents, 1234);

describe('CPU engine, streamed in small windows, equals the whole-tensor reference', () => {
  const cases: [FloatDtype, FloatDtype, number, number][] = [
    ['BF16', 'BF16', 3, 1001],
    ['F16', 'F32', 2, 517],
    ['F32', 'BF16', 4, 333],
  ];
  for (const [dtype, outDtype, agents, numel] of cases) {
    const t = randomTensor({ name: `w.${dtype}`, dtype, numel, agents, seed: numel });
    const engine = createCpuEngine({ agents, maxWindowElements: 97 });

    it(`analyzes ${dtype} N=${agents} to the reference statistics`, async () => {
      expect(await engine.analyze(t.input, 1e-5)).toEqual(referenceStats(t.values, 1e-5));
    });

    // SLERP takes one agent: its own cases below.
    const methods = METHODS.filter((m) => m !== 'slerp');
    it.each(methods)(`merges %s ${dtype}→${outDtype} N=${agents} byte for byte`, async (method) => {
      const params = paramsFor(method, agents);
      const lambdas = [1.1, 1.2, 1.05, 1.15].slice(0, agents);
      let progress = 0;
      const got = await mergeBytes(engine, t.input, {
        params,
        lambdas,
        outDtype,
        onProgress: (b) => (progress = b),
      });
      expect(got).toEqual(encodeFloats(outDtype, referenceMerge(t.values, params, lambdas)));
      expect(progress).toBe(numel * (agents + 1) * (dtype === 'F32' ? 4 : 2));
    });
  }
});

describe('CPU engine failures', () => {
  const t = randomTensor({ name: 'x', dtype: 'BF16', numel: 300, agents: 2, seed: 5 });

  it('stops with an AbortError between windows and emits nothing after the abort', async () => {
    const engine = createCpuEngine({ agents: 2, maxWindowElements: 100 });
    const controller = new AbortController();
    let emitted = 0;
    const run = engine.merge(t.input, {
      params: defaultParams('ram', 2),
      lambdas: [],
      outDtype: 'BF16',
      signal: controller.signal,
      emit: async () => {
        emitted++;
        controller.abort();
      },
    });
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(emitted).toBe(1);
  });

  it('names the tensor when a read fails, the cause kept', async () => {
    const engine = createCpuEngine({ agents: 2 });
    const broken = { ...t.input, read: () => Promise.reject(new Error('disk gone')) };
    const error = await engine.analyze(broken, 1e-5).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineTensorError);
    expect((error as EngineTensorError).tensor).toBe('x');
    expect((error as Error).message).toContain('disk gone');
  });

  it('rejects parameters for another number of agents', async () => {
    const engine = createCpuEngine({ agents: 2 });
    const params = { ...defaultParams('ramplus', 2), weights: [1] };
    await expect(
      engine.merge(t.input, { params, lambdas: [1, 1], outDtype: 'BF16', emit: async () => undefined }),
    ).rejects.toThrow(/expected 2 weights/);
  });
});

describe('CPU engine: DELLA by rows and SLERP of one agent, over windows', () => {
  const shaped = (numel: number, shape: number[], agents: number, seed: number) => {
    const t = randomTensor({ name: `model.layers.2.della.${seed}`, dtype: 'BF16', numel, agents, seed });
    return { input: { ...t.input, shape }, values: { ...t.values, shape } };
  };

  for (const method of ['della', 'della_linear'] as const)
    for (const rescale of ['density', 'l1', 'none'] as const)
      it(`${method} (${rescale}) over windows of whole rows equals the reference, byte for byte`, async () => {
        // Rows of 37: windows of 97 elements hold two rows (74 elements); a 3-D shape ranks along dim 1.
        for (const [shape, numel] of [
          [[27, 37], 999],
          [[3, 37, 3], 333],
        ] as const) {
          const t = shaped(numel, [...shape], 3, numel + shape.length);
          const params = { ...testParams(method, 3, 77), rescale };
          const engine = createCpuEngine({ agents: 3, maxWindowElements: 97 });
          const got = await mergeBytes(engine, t.input, { params, lambdas: [], outDtype: 'F32' });
          const want = referenceMerge(t.values, params, []);
          expect(got).toEqual(encodeFloats('F32', want));
          // The row structure matters: ranked as one row of the whole tensor, the merge differs.
          const flat = referenceMerge({ ...t.values, shape: [numel] }, params, []);
          expect(flat.some((x, i) => x !== want[i])).toBe(true);
        }
      });

  it('refuses DELLA where density ± ε leaves (0, 1), naming the agent', async () => {
    const t = shaped(100, [10, 10], 2, 1);
    const params = { ...testParams('della', 2, 1), density: [0.5, 0.9], dellaEpsilon: [0.1, 0.15] };
    const engine = createCpuEngine({ agents: 2 });
    await expect(
      engine.merge(t.input, { params, lambdas: [], outDtype: 'F32', emit: async () => undefined }),
    ).rejects.toThrow(/agent 2: density ± dellaEpsilon must lie inside \(0, 1\)/);
  });

  it('merges SLERP of one agent over windows as the whole-tensor reference', async () => {
    const t = randomTensor({ name: 'model.layers.0.slerp', dtype: 'F16', numel: 1001, agents: 1, seed: 9 });
    for (const tt of [0, 0.3, 1]) {
      const params = { ...testParams('slerp', 1, 0), t: tt };
      const engine = createCpuEngine({ agents: 1, maxWindowElements: 97 });
      const got = await mergeBytes(engine, t.input, { params, lambdas: [], outDtype: 'F32' });
      expect(got).toEqual(encodeFloats('F32', referenceMerge(t.values, params, [])));
    }
  });

  it('refuses SLERP of two agents', async () => {
    const t = randomTensor({ name: 's', dtype: 'F16', numel: 10, agents: 2, seed: 9 });
    const engine = createCpuEngine({ agents: 2 });
    await expect(
      engine.merge(t.input, {
        params: testParams('slerp', 2, 0),
        lambdas: [],
        outDtype: 'F32',
        emit: async () => undefined,
      }),
    ).rejects.toThrow(/exactly one agent/);
  });
});

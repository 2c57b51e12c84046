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

    it.each(METHODS)(`merges %s ${dtype}→${outDtype} N=${agents} byte for byte`, async (method) => {
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

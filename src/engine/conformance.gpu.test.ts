// One conformance table run against the CPU reference and the GPU engine on fresh seeded inputs:
// every method × input and output dtype × odd element counts × N = 2..4 × one or many windows. The
// output buffer is poisoned (0xFF) before every window; statistics must be exactly equal integers,
// merged values within TOLERANCE of the f64 reference, and the CPU engine equal to it bit for bit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { createCpuEngine } from './cpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { ulpOf } from '../methods/float32.ts';
import { referenceMerge, referenceStats, type TensorValues } from '../methods/reference.ts';
import { ramLambdas, sumStats } from '../methods/stats.ts';
import { injectNonFinite, type Injected } from '../test/nonfinite-tensors.ts';
import { mergeBytes, randomTensor, testParams } from '../test/tensors.ts';
import { tensorInput } from '../methods/tensors.ts';
import { METHODS, type MethodName, type MethodParams } from '../methods/types.ts';
import { GpuDeviceError } from './gpu/device.ts';
import { EngineTensorError } from './contract.ts';
import { nonFiniteCause } from '../methods/errors.ts';
import { createGpuEngine } from './gpu/gpu-engine.ts';
import { openGpuHarness } from '../test/gpu-harness.ts';
import type { MergeEngine } from './contract.ts';
import type { TensorInput } from '../methods/tensors.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

/**
 * |GPU − reference| ≤ outUlps ulps of the output dtype at the reference value, plus f32Ulps f32 ulps
 * of the largest magnitude the element's arithmetic passes through (inputs, result, × weights and
 * rescales): the GPU computes in f32, the reference in f64, and both round once to the output.
 */
const TOLERANCE: Record<FloatDtype, { outUlps: number; f32Ulps: number }> = {
  F32: { outUlps: 1, f32Ulps: 8 },
  BF16: { outUlps: 1, f32Ulps: 8 },
  F16: { outUlps: 1, f32Ulps: 8 },
};

interface Config {
  dtype: FloatDtype;
  out: FloatDtype;
  agents: number;
  numel: number;
  /** maxWindowElements; undefined: the default (one window for these sizes). */
  window?: number;
}

const CONFIGS: Config[] = [
  { dtype: 'BF16', out: 'BF16', agents: 3, numel: 257, window: 64 },
  { dtype: 'F16', out: 'F16', agents: 2, numel: 65537, window: 20000 },
  { dtype: 'F32', out: 'F32', agents: 4, numel: 3, window: 2 },
  { dtype: 'BF16', out: 'F32', agents: 2, numel: 1 },
  { dtype: 'F32', out: 'BF16', agents: 3, numel: 4099, window: 1000 },
  { dtype: 'F16', out: 'F32', agents: 4, numel: 1025 },
  { dtype: 'BF16', out: 'F16', agents: 2, numel: 12345, window: 3001 },
  // Merge kernels write out their agent steps up to N = 8 and loop beyond: both sides of the line.
  { dtype: 'BF16', out: 'BF16', agents: 8, numel: 3001, window: 1000 },
  { dtype: 'F16', out: 'F32', agents: 9, numel: 2001 },
];

const LAMBDAS = [1.1, 1.2, 1.05, 1.15, 1.12, 1.01, 1.18, 1.07, 1.03];

const paramsFor = (method: MethodName, agents: number): MethodParams => testParams(method, agents, 4242);

/** The methods of any number of agents; SLERP (one agent) has its own rows. */
const MANY = METHODS.filter((m) => m !== 'slerp');

/**
 * A shape for DELLA's rank groups: rows of the largest divisor of numel up to √numel·3 (a prime
 * numel: one row), so windows hold several rows, or must grow to hold one.
 */
function shapeOf(numel: number): number[] {
  let cols = numel;
  for (let d = 2; d * d <= numel; d++)
    if (numel % d === 0 && numel / d <= 3 * Math.sqrt(numel)) cols = numel / d;
  return [numel / cols, cols];
}

/** The tensor with a shape for DELLA, as is for the others. */
function shaped<T extends { input: TensorInput; values: TensorValues }>(
  t: T,
  method: MethodName,
  numel: number,
): T {
  if (!method.startsWith('della')) return t;
  const shape = shapeOf(numel);
  return { ...t, input: { ...t.input, shape }, values: { ...t.values, shape } };
}

async function run(
  engine: MergeEngine,
  tensor: TensorInput,
  params: MethodParams,
  out: FloatDtype,
): Promise<Uint8Array> {
  return mergeBytes(engine, tensor, { params, lambdas: LAMBDAS.slice(0, engine.agents), outDtype: out });
}

const exactShare = new Map<string, { exact: number; total: number }>();

function expectWithinTolerance(
  label: string,
  got: Uint8Array,
  want: Float64Array,
  values: TensorValues,
  params: MethodParams,
  out: FloatDtype,
): void {
  expect(got.byteLength).toBe(encodeFloats(out, want).byteLength);
  const gotValues = decodeFloats(out, got, want.length);
  const wantBytes = encodeFloats(out, want);
  const size = out === 'F32' ? 4 : 2;
  const dare = params.method.startsWith('dare');
  // DELLA's 1/p reaches 1/(density − ε).
  const della = params.method.startsWith('della');
  const lowest = params.density.map((d, t) => d - (params.dellaEpsilon?.[t] ?? 0));
  const scale = 4 * (dare ? 1 / Math.min(...params.density) : della ? 1 / Math.min(...lowest) : 1);
  const { outUlps, f32Ulps } = TOLERANCE[out];
  const bad: string[] = [];
  let exact = 0;
  for (let i = 0; i < want.length; i++) {
    let magnitude = Math.max(Math.abs(want[i]!), Math.abs(values.base[i]!));
    for (const a of values.agents) magnitude = Math.max(magnitude, Math.abs(a[i]!));
    const allowed =
      outUlps * ulpOf(Math.fround(want[i]!), out) + f32Ulps * ulpOf(Math.fround(scale * magnitude), 'F32');
    const g = gotValues[i]!;
    if (!(Math.abs(g - want[i]!) <= allowed)) bad.push(`[${i}] got ${g}, want ${want[i]} ± ${allowed}`);
    if (got.subarray(i * size, (i + 1) * size).every((b, j) => b === wantBytes[i * size + j])) exact++;
  }
  expect(bad.slice(0, 5), label).toEqual([]);
  const share = exactShare.get(`${params.method} → ${out}`) ?? { exact: 0, total: 0 };
  share.exact += exact;
  share.total += want.length;
  exactShare.set(`${params.method} → ${out}`, share);
}

describe.skipIf(!harness)(`GPU engine conformance ${opened.skip ?? ''}`, () => {
  afterAll(() => {
    const rows = [...exactShare].map(
      ([k, v]) => `${k}: ${((100 * v.exact) / v.total).toFixed(2)}% of ${v.total}`,
    );
    console.log(`bit-exact share of GPU outputs vs the reference rounded once:\n  ${rows.join('\n  ')}`);
  });

  CONFIGS.forEach((config, c) => {
    const windows = config.window ? Math.ceil(config.numel / config.window) : 1;
    describe(`${config.dtype}→${config.out}, N=${config.agents}, ${config.numel} elements, ${windows} window(s)`, () => {
      let gpu: MergeEngine;
      const cpu = createCpuEngine({ agents: config.agents, maxWindowElements: config.window });
      beforeAll(() => {
        gpu = createGpuEngine(harness!.device, {
          agents: config.agents,
          adapterDescription: harness!.adapterDescription,
          maxWindowElements: config.window,
          poisonOutput: true,
        });
      });
      afterAll(() => gpu.destroy());

      it('computes exactly the reference statistics (ε = 1e-5 and ε = 0)', async () => {
        const t = randomTensor({ name: `stats.${c}`, ...config, seed: 1000 + c });
        for (const epsilon of [1e-5, 0]) {
          const want = referenceStats(t.values, epsilon);
          expect(await harness!.run(() => gpu.analyze(t.input, epsilon))).toEqual(want);
          expect(await cpu.analyze(t.input, epsilon)).toEqual(want);
        }
      });

      it.each(METHODS.map((m, k) => [m, k] as const))('merges %s', async (method, k) => {
        const t = shaped(
          randomTensor({ name: `model.layers.${c}.${method}`, ...config, seed: 100 * c + k }),
          method,
          config.numel,
        );
        const params = paramsFor(method, config.agents);
        if (method === 'slerp') {
          // One agent only: both engines refuse the others.
          for (const engine of [cpu, gpu])
            await expect(harness!.run(() => run(engine, t.input, params, config.out))).rejects.toThrow(
              /exactly one agent/,
            );
          return;
        }
        const want = referenceMerge(t.values, params, LAMBDAS.slice(0, config.agents));
        expect(await run(cpu, t.input, params, config.out)).toEqual(encodeFloats(config.out, want));
        const got = await harness!.run(() => run(gpu, t.input, params, config.out));
        expectWithinTolerance(method, got, want, t.values, params, config.out);
      });
    });
  });

  it('keeps RAM with bf16 output bit-for-bit equal to the reference in nearly every element', () => {
    const share = exactShare.get('ram → BF16')!;
    expect(share.total).toBeGreaterThan(0);
    expect(share.exact / share.total).toBeGreaterThan(0.99);
  });
});

// SLERP merges the base with one agent: its own configurations, over one window and many, on agents
// near the base (the lerp fallback) and far from it (the spherical path), and NaN / ±Inf.
describe.skipIf(!harness)(`GPU engine conformance, SLERP of one agent ${opened.skip ?? ''}`, () => {
  const configs: Config[] = [
    { dtype: 'BF16', out: 'BF16', agents: 1, numel: 4097, window: 1000 },
    { dtype: 'F16', out: 'F32', agents: 1, numel: 65537, window: 20000 },
    { dtype: 'F32', out: 'F16', agents: 1, numel: 3 },
  ];
  it.each(configs)('$dtype→$out, $numel elements, window $window', async (config) => {
    const gpu = createGpuEngine(harness!.device, {
      agents: 1,
      adapterDescription: harness!.adapterDescription,
      maxWindowElements: config.window,
      poisonOutput: true,
    });
    const cpu = createCpuEngine({ agents: 1, maxWindowElements: config.window });
    try {
      const near = randomTensor({ name: `slerp.${config.numel}`, ...config, seed: config.numel });
      // Far: the agent is the base of another draw, so the angle is large.
      const other = randomTensor({ name: 'far', ...config, seed: config.numel + 1 });
      const farBytes = [near.bytes[0]!, other.bytes[0]!];
      const far = {
        input: tensorInput(`slerp.far.${config.numel}`, config.dtype, farBytes),
        values: { ...near.values, name: `slerp.far.${config.numel}`, agents: [other.values.base] },
      };
      for (const [t, tt] of [
        [near, 0.3],
        [far, 0.3],
        [far, 0.8],
      ] as const) {
        const params = { ...paramsFor('slerp', 1), t: tt };
        const want = referenceMerge(t.values, params, []);
        expect(await run(cpu, t.input, params, config.out)).toEqual(encodeFloats(config.out, want));
        const got = await harness!.run(() => run(gpu, t.input, params, config.out));
        expectWithinTolerance('slerp', got, want, t.values, params, config.out);
      }
      const nf = injectNonFinite(randomTensor({ name: 'slerp.nf', ...config, numel: 1025, seed: 5 }), {
        differ: 4,
        kept: 3,
        models: [0, 1],
        seed: 5,
      });
      const error = await harness!
        .run(() => run(gpu, nf.input, paramsFor('slerp', 1), config.out))
        .catch((e: unknown) => e);
      expect([nonFiniteCause(error)?.nonFinite, nonFiniteCause(error)?.perModel]).toEqual([4, nf.perModel]);
    } finally {
      gpu.destroy();
    }
  });
});

// The statistics kernel counts 32768 elements per workgroup: windows of several workgroups with a
// partial tail, at N = 8 (counted per set of changing agents) and N = 9 (counted per counter).
describe.skipIf(!harness)('GPU statistics over windows of many workgroups', () => {
  const cases: Config[] = [
    { dtype: 'BF16', out: 'BF16', agents: 8, numel: 100003, window: 70001 },
    { dtype: 'F32', out: 'F32', agents: 9, numel: 40001 },
  ];
  it.each(cases)('$dtype, N=$agents, $numel elements', async (config) => {
    const t = randomTensor({ name: `stats.wide.${config.agents}`, ...config, seed: 2000 + config.agents });
    const engine = createGpuEngine(harness!.device, {
      agents: config.agents,
      adapterDescription: harness!.adapterDescription,
      maxWindowElements: config.window,
    });
    try {
      const want = referenceStats(t.values, 1e-5);
      expect(want.counts[4]).toBeGreaterThan(0);
      // toEqual compares pairs too; they exist (and so are checked) exactly when N <= 8.
      expect(want.pairs?.length).toBe(config.agents <= 8 ? config.agents : undefined);
      // And the per-set counts (the UpSet view's intersections), 2^N of them exactly when N <= 8.
      expect(want.sets?.length).toBe(config.agents <= 8 ? 2 ** config.agents : undefined);
      const got = await harness!.run(() => engine.analyze(t.input, 1e-5));
      expect(got.sets).toEqual(want.sets);
      expect(got).toEqual(want);
    } finally {
      engine.destroy();
    }
  });
});

describe.skipIf(!harness)('GPU engine on the SPEC.md worked example', () => {
  const rows = [
    [0, 0.3, 0, 0.6, 0.7, 0, 0.1, 0, 0],
    [0, 0.7, 0, 0.5, 0.8, 0.2, 0, 0, 0],
    [0, 0.5, 0, 0.4, 0.9, 0, 0, 0, 0.1],
  ];
  const bytes = [new Array<number>(9).fill(0), ...rows].map((r) => encodeFloats('F32', r));
  const input = tensorInput('example', 'F32', bytes);

  it('gives the statistics, RAM, RAM+, RAM+s and task arithmetic values SPEC.md lists', async () => {
    const engine = createGpuEngine(harness!.device, {
      agents: 3,
      adapterDescription: 'test',
      maxWindowElements: 4,
    });
    try {
      const stats = await harness!.run(() => engine.analyze(input, 1e-5));
      expect(stats.counts).toEqual([3, 3, 0, 3]);
      expect(stats.overlap).toEqual([
        [1, 0, 3],
        [1, 0, 3],
        [1, 0, 3],
      ]);
      expect(stats.pairs).toEqual([
        [4, 3, 3],
        [3, 4, 3],
        [3, 3, 4],
      ]);
      const totals = sumStats([stats]);
      const merged = async (
        method: MethodName,
        lambdas: number[],
        weights = [1, 1, 1],
      ): Promise<number[]> => {
        const params = { ...defaultParams(method, 3), weights };
        const bytes = await harness!.run(() =>
          mergeBytes(engine, input, { params, lambdas, outDtype: 'F32' }),
        );
        return Array.from(decodeFloats('F32', bytes, bytes.byteLength / 4));
      };
      const close = (got: number[], want: number[]): void =>
        got.forEach((g, i) => expect(g).toBeCloseTo(want[i]!, 6));
      close(await merged('ram', [1, 1, 1]), [0, 0.5, 0, 0.5, 0.8, 0.2, 0.1, 0, 0.1]);
      close(
        await merged('ramplus', ramLambdas(totals, 'ramplus', 0.1, 2)),
        [0, 0.5, 0, 0.5, 0.8, 0.24, 0.12, 0, 0.12],
      );
      close(
        await merged('ramplus_soft', ramLambdas(totals, 'ramplus_soft', 0.1, 2)),
        [0, 0.5, 0, 0.5, 0.8, 0.215, 0.1075, 0, 0.1075],
      );
      const ta = await merged('task_arithmetic', [], [1 / 3, 1 / 3, 1 / 3]);
      expect([ta[5], ta[6], ta[8]].map((v) => v!.toFixed(4))).toEqual(['0.0667', '0.0333', '0.0333']);
    } finally {
      engine.destroy();
    }
  });
});

describe.skipIf(!harness)('GPU engine lifecycle and failures', () => {
  const t = randomTensor({ name: 'lifecycle', dtype: 'BF16', numel: 5000, agents: 2, seed: 77 });
  const params = defaultParams('ram', 2);

  it('stops between windows on abort, emits nothing after it, and stays usable', async () => {
    const engine = createGpuEngine(harness!.device, {
      agents: 2,
      adapterDescription: 'test',
      maxWindowElements: 500,
    });
    try {
      const controller = new AbortController();
      let emitted = 0;
      const merge = engine.merge(t.input, {
        params,
        lambdas: [],
        outDtype: 'BF16',
        signal: controller.signal,
        emit: async () => {
          emitted++;
          controller.abort();
        },
      });
      await expect(harness!.run(() => merge)).rejects.toMatchObject({ name: 'AbortError' });
      expect(emitted).toBe(1);
      const again = await harness!.run(() => run(engine, t.input, params, 'BF16'));
      expect(again).toEqual(encodeFloats('BF16', referenceMerge(t.values, params, [])));
    } finally {
      engine.destroy();
    }
  });

  it('names the tensor when an input read fails', async () => {
    const engine = createGpuEngine(harness!.device, {
      agents: 2,
      adapterDescription: 'test',
      maxWindowElements: 500,
    });
    try {
      let reads = 0;
      const broken: TensorInput = {
        ...t.input,
        read: (index, start, count, into) =>
          ++reads > 7 ? Promise.reject(new Error('EIO')) : t.input.read(index, start, count, into),
      };
      const error = await harness!.run(() => engine.analyze(broken, 1e-5)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EngineTensorError);
      expect((error as EngineTensorError).message).toMatch(/tensor "lifecycle": EIO/);
    } finally {
      engine.destroy();
    }
  });

  it('rejects in-flight work with a GpuDeviceError when the device is lost, instead of hanging', async () => {
    const lost = await harness!.newDevice();
    const engine = createGpuEngine(lost.device, {
      agents: 2,
      adapterDescription: 'test',
      maxWindowElements: 500,
    });
    const error = await engine
      .merge(t.input, {
        params,
        lambdas: [],
        outDtype: 'BF16',
        emit: async () => lost.destroy(),
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineTensorError);
    expect((error as Error).cause).toBeInstanceOf(GpuDeviceError);
    const next = await engine.analyze(t.input, 1e-5).catch((e: unknown) => e);
    expect((next as Error).cause).toBeInstanceOf(GpuDeviceError);
    engine.destroy();
  });

  it('handles empty tensors and concurrent calls (run one after another)', async () => {
    const engine = createGpuEngine(harness!.device, {
      agents: 2,
      adapterDescription: 'test',
      maxWindowElements: 300,
    });
    try {
      const empty = tensorInput('empty', 'F16', [new Uint8Array(0), new Uint8Array(0), new Uint8Array(0)]);
      const stats = await harness!.run(() => engine.analyze(empty, 1e-5));
      expect(stats.counts).toEqual([0, 0, 0]);
      expect(await harness!.run(() => run(engine, empty, params, 'F16'))).toEqual(new Uint8Array(0));
      const other = randomTensor({ name: 'other', dtype: 'F32', numel: 1001, agents: 2, seed: 78 });
      const ties = defaultParams('ties', 2);
      const [a, b, s] = await harness!.run(() =>
        Promise.all([
          run(engine, t.input, params, 'BF16'),
          run(engine, other.input, ties, 'F32'),
          engine.analyze(t.input, 0),
        ]),
      );
      expect(a).toEqual(encodeFloats('BF16', referenceMerge(t.values, params, [])));
      expectWithinTolerance('ties', b, referenceMerge(other.values, ties, []), other.values, ties, 'F32');
      expect(s).toEqual(referenceStats(t.values, 0));
    } finally {
      engine.destroy();
    }
  });

  it('destroys every buffer it created, and destroy() is idempotent', async () => {
    const engine = createGpuEngine(harness!.device, {
      agents: 2,
      adapterDescription: 'test',
      maxWindowElements: 700,
    });
    for (const method of ['ties', 'ramplus_tl', 'dare_ties'] as const) {
      await harness!.run(() => run(engine, t.input, defaultParams(method, 2), 'F32'));
    }
    expect(harness!.liveBuffers().length).toBeGreaterThan(0);
    engine.destroy();
    engine.destroy();
    expect(harness!.liveBuffers()).toEqual([]);
    await expect(engine.analyze(t.input, 1e-5)).rejects.toThrow(/destroyed/);
  });
});

// SPEC.md "Non-finite values" on the GPU: NaN (two payloads) and ±Inf in the base or agents are
// counted, never merged; elements every model holds alike are kept; finite values overflowing the
// output dtype are an error. Counts are known from how the inputs were built.
describe.skipIf(!harness)('GPU engine on NaN, ±Inf and overflow', () => {
  const rows: Config[] = [
    { dtype: 'BF16', out: 'BF16', agents: 3, numel: 257, window: 64 },
    { dtype: 'F16', out: 'F32', agents: 4, numel: 513 },
    { dtype: 'F32', out: 'F16', agents: 2, numel: 1025, window: 300 },
  ];
  rows.forEach((config, c) => {
    describe(`${config.dtype}→${config.out}, N=${config.agents}`, () => {
      let gpu: MergeEngine;
      const cpu = createCpuEngine({ agents: config.agents, maxWindowElements: config.window });
      beforeAll(() => {
        gpu = createGpuEngine(harness!.device, {
          agents: config.agents,
          adapterDescription: harness!.adapterDescription,
          maxWindowElements: config.window,
          poisonOutput: true,
        });
      });
      afterAll(() => gpu.destroy());
      const all = Array.from({ length: config.agents + 1 }, (_, m) => m);
      const make = (seed: number, differ: number, kept: number, models = all): Injected =>
        injectNonFinite(randomTensor({ name: `nf.${c}.${seed}`, ...config, seed }), {
          differ,
          kept,
          models,
          seed,
        });

      it('counts nonFinite per model exactly and classifies everything else as the reference does', async () => {
        const t = make(1, 11, 6);
        const stats = await harness!.run(() => gpu.analyze(t.input, 1e-5));
        expect(stats.nonFinite).toBe(11);
        expect(stats.nonFiniteModels).toEqual(t.perModel);
        expect(stats.counts.reduce((a, b) => a + b, 0)).toBe(config.numel - 11);
        expect(stats).toEqual(referenceStats(t.values, 1e-5));
      });

      it.each(MANY.map((m, k) => [m, k] as const))('%s fails on differing NaN / ±Inf', async (method, k) => {
        const t = make(10 + k, 4, 3, method === 'linear' ? all.slice(1) : all);
        const params = paramsFor(method, config.agents);
        for (const engine of [gpu, cpu]) {
          const error = await harness!
            .run(() => run(engine, t.input, params, config.out))
            .catch((e: unknown) => e);
          const cause = nonFiniteCause(error);
          expect(cause, `${engine.kind}: ${String(error)}`).toBeDefined();
          expect([cause!.nonFinite, cause!.perModel]).toEqual([4, t.perModel]);
        }
      });

      it.each(MANY.map((m, k) => [m, k] as const))('%s keeps identical NaN / ±Inf', async (method, k) => {
        const t = make(30 + k, 0, 5);
        const params = paramsFor(method, config.agents);
        const got = await harness!.run(() => run(gpu, t.input, params, config.out));
        const values = decodeFloats(config.out, got, config.numel);
        for (const [i, special] of t.kept) {
          expect(values[i], `[${i}] ${special}`).toBe(
            special.startsWith('nan') ? NaN : special === 'inf' ? Infinity : -Infinity,
          );
        }
        // Elsewhere the usual tolerance against the reference, with the kept elements zeroed.
        const zero = (a: Float64Array): Float64Array => a.map((x, i) => (t.kept.has(i) ? 0 : x));
        const want = zero(referenceMerge(t.values, params, LAMBDAS.slice(0, config.agents)));
        const finite: TensorValues = {
          ...t.values,
          base: zero(t.values.base),
          agents: t.values.agents.map(zero),
        };
        expectWithinTolerance(
          method,
          encodeFloats(config.out, zero(values)),
          want,
          finite,
          params,
          config.out,
        );
      });
    });
  });

  it.each(MANY.filter((m) => !m.startsWith('dare')))(
    '%s: finite values that overflow the f16 output are an error, like the CPU engine',
    async (method) => {
      const numel = 600;
      const big = [0, 7, 255, 256, 599];
      const t = randomTensor({ name: `overflow.${method}`, dtype: 'F32', numel, agents: 3, seed: 5 });
      const bytes = t.bytes.map((b, m) => {
        const values = decodeFloats('F32', b, numel);
        for (const i of big) values[i] = m === 0 ? 0 : 1e6;
        return encodeFloats('F32', values);
      });
      const input = tensorInput(`overflow.${method}`, 'F32', bytes);
      const gpu = createGpuEngine(harness!.device, {
        agents: 3,
        adapterDescription: 'test',
        maxWindowElements: 256,
      });
      try {
        const params = paramsFor(method, 3);
        // Breadcrumbs would drop these largest |τ| as outliers: with gamma 0 it keeps them.
        if (params.gamma) params.gamma = [0, 0, 0];
        for (const engine of [gpu, createCpuEngine({ agents: 3 })]) {
          const error = await harness!.run(() => run(engine, input, params, 'F16')).catch((e: unknown) => e);
          expect(nonFiniteCause(error)?.overflow, `${engine.kind}: ${String(error)}`).toBe(big.length);
        }
        // f32 holds them.
        expect((await harness!.run(() => run(gpu, input, params, 'F32'))).byteLength).toBe(numel * 4);
      } finally {
        gpu.destroy();
      }
    },
  );

  it('takes |τ| = fround(1e-3) as a change at ε = 1e-3 (the largest f32 ≤ ε), like the reference', async () => {
    const f = Math.fround(1e-3);
    const bytes = [
      [0, 0, 0, 0, 0],
      [f, -f, 0.0009, 0, f],
      [0, 0, 0, -f, f],
    ].map((r) => encodeFloats('F32', r));
    const input = tensorInput('eps', 'F32', bytes);
    const gpu = createGpuEngine(harness!.device, { agents: 2, adapterDescription: 'test' });
    try {
      const stats = await harness!.run(() => gpu.analyze(input, 1e-3));
      expect(stats.counts).toEqual([1, 3, 1]);
      const params = { ...defaultParams('ram', 2), epsilon: 1e-3 };
      const merged = decodeFloats('F32', await harness!.run(() => run(gpu, input, params, 'F32')), 5);
      expect(Array.from(merged)).toEqual([f, -f, 0, -f, f]);
    } finally {
      gpu.destroy();
    }
  });
});

// SPEC.md "Non-finite values" and the ε rule on the CPU engine: NaN / ±Inf counted, never merged,
// identical specials kept, overflow to ±Inf an error, for every method. Expected counts come from how
// the inputs were built; the GPU runs the same rows in src/engine/conformance.gpu.test.ts.
import { describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { nonFiniteCause } from './errors.ts';
import type { MergeEngine } from '../engine/contract.ts';
import type { TensorInput } from './tensors.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import { injectNonFinite, type Injected } from '../test/nonfinite-tensors.ts';
import { referenceMerge, referenceStats, type TensorValues } from './reference.ts';
import { mergeBytes, randomTensor, testParams } from '../test/tensors.ts';
import { tensorInput } from './tensors.ts';
import { METHODS, type MethodName } from './types.ts';

const LAMBDAS = [1.1, 1.2, 1.05];
/** The methods of N = 3 agents; SLERP (one agent) has its own rows below. */
const MANY = METHODS.filter((m) => m !== 'slerp');

async function merge(
  engine: MergeEngine,
  input: TensorInput,
  method: MethodName,
  out: FloatDtype,
  params = testParams(method, engine.agents, 7),
): Promise<Uint8Array> {
  return mergeBytes(engine, input, { params, lambdas: LAMBDAS.slice(0, engine.agents), outDtype: out });
}

/** The values without the elements at `drop`. */
function without(v: TensorValues, drop: Set<number>): TensorValues {
  const keep = (a: Float64Array): Float64Array => a.filter((_, i) => !drop.has(i));
  return { name: v.name, dtype: v.dtype, base: keep(v.base), agents: v.agents.map(keep) };
}

function injected(dtype: FloatDtype, seed: number, differ: number, kept: number, linear = false): Injected {
  const t = randomTensor({ name: `nf.${dtype}.${seed}`, dtype, numel: 301, agents: 3, seed });
  return injectNonFinite(t, { differ, kept, models: linear ? [1, 2, 3] : [0, 1, 2, 3], seed });
}

describe.each(['F32', 'BF16', 'F16'] as const)('non-finite %s inputs on the CPU engine', (dtype) => {
  const engine = createCpuEngine({ agents: 3, maxWindowElements: 64 });

  it('counts differing NaN / ±Inf per model and tensor, keeps identical ones as unchanged', async () => {
    const original = randomTensor({ name: `nf.${dtype}.1`, dtype, numel: 301, agents: 3, seed: 1 });
    const t = injectNonFinite(original, { differ: 9, kept: 6, models: [0, 1, 2, 3], seed: 1 });
    const stats = await engine.analyze(t.input, 1e-5);
    expect(stats.nonFinite).toBe(9);
    expect(stats.nonFiniteModels).toEqual(t.perModel);
    expect(t.perModel.reduce((a, b) => a + b)).toBeGreaterThanOrEqual(9);
    expect(stats.counts.reduce((a, b) => a + b)).toBe(301 - 9);
    // Every other element is classified as it was before the specials went in; kept ones are c = 0.
    const touched = new Set([...t.differAt, ...t.kept.keys()]);
    const rest = referenceStats(without(original.values, touched), 1e-5);
    expect(stats.counts).toEqual(rest.counts.map((c, k) => (k === 0 ? c + t.kept.size : c)));
    expect(stats.changed).toEqual(rest.changed);
  });

  it.each(MANY)('%s stops with the count per model instead of merging a NaN or Inf', async (method) => {
    const t = injected(dtype, 2, 5, 3, method === 'linear');
    const error = await merge(engine, t.input, method, dtype).catch((e: unknown) => e);
    const cause = nonFiniteCause(error);
    expect(cause, String(error)).toBeDefined();
    expect(cause!.nonFinite).toBe(5);
    expect(cause!.perModel).toEqual(t.perModel);
    expect((error as Error).message).toMatch(/tensor "nf\.\w+\.2": 5 elements hold NaN or ±Inf/);
  });

  it.each(MANY)('%s keeps an element that every model holds as the same NaN or ±Inf', async (method) => {
    const t = injected(dtype, 3, 0, 7, method === 'linear');
    const got = decodeFloats(dtype, await merge(engine, t.input, method, dtype), 301);
    for (const [i, special] of t.kept) {
      const want = special.startsWith('nan') ? NaN : special === 'inf' ? Infinity : -Infinity;
      expect(got[i], `[${i}] ${special}`).toBe(want);
    }
    const want = referenceMerge(t.values, testParams(method, 3, 7), LAMBDAS);
    const wantBytes = encodeFloats(dtype, want);
    expect(
      encodeFloats(
        dtype,
        got.map((x, i) => (t.kept.has(i) ? 0 : x)),
      ),
    ).toEqual(
      encodeFloats(
        dtype,
        decodeFloats(dtype, wantBytes, 301).map((x, i) => (t.kept.has(i) ? 0 : x)),
      ),
    );
  });
});

describe('overflow to ±Inf of a finite merged value', () => {
  const engine = createCpuEngine({ agents: 3, maxWindowElements: 100 });
  const numel = 257;
  const big = [3, 50, 100, 200, 256];
  // f32 inputs holding 1e6 in every agent over a zero base: finite, but not in an f16 output.
  const t = randomTensor({ name: 'overflow', dtype: 'F32', numel, agents: 3, seed: 9 });
  const bytes = t.bytes.map((b, m) => {
    const values = decodeFloats('F32', b, numel);
    for (const i of big) values[i] = m === 0 ? 0 : 1e6;
    return encodeFloats('F32', values);
  });
  const input = tensorInput('overflow', 'F32', bytes);

  it.each(MANY.filter((m) => !m.startsWith('dare')))(
    '%s into f16 is an error naming the count',
    async (method) => {
      const params = testParams(method, engine.agents, 7);
      // Breadcrumbs would drop these largest |τ| as outliers: with gamma 0 it keeps them.
      if (params.gamma) params.gamma = params.gamma.map(() => 0);
      const error = await merge(engine, input, method, 'F16', params).catch((e: unknown) => e);
      expect(nonFiniteCause(error)?.overflow, String(error)).toBe(big.length);
      expect((error as Error).message).toMatch(/5 merged values overflow to ±Inf/);
      // The same merge into f32 holds the values.
      expect((await merge(engine, input, method, 'F32', params)).byteLength).toBe(numel * 4);
    },
  );
});

describe('SLERP (one agent) on NaN, ±Inf and overflow', () => {
  const engine = createCpuEngine({ agents: 1, maxWindowElements: 64 });
  const one = (dtype: FloatDtype, seed: number, differ: number, kept: number): Injected =>
    injectNonFinite(randomTensor({ name: `nf.slerp.${seed}`, dtype, numel: 301, agents: 1, seed }), {
      differ,
      kept,
      models: [0, 1],
      seed,
    });

  it.each(['F32', 'BF16', 'F16'] as const)('%s: stops with the count per model', async (dtype) => {
    const t = one(dtype, 2, 5, 3);
    const error = await merge(engine, t.input, 'slerp', dtype).catch((e: unknown) => e);
    const cause = nonFiniteCause(error);
    expect(cause, String(error)).toBeDefined();
    expect([cause!.nonFinite, cause!.perModel]).toEqual([5, t.perModel]);
  });

  it.each(['F32', 'BF16', 'F16'] as const)(
    '%s: keeps identical NaN / ±Inf, merges the rest',
    async (dtype) => {
      const t = one(dtype, 3, 0, 7);
      const got = decodeFloats(dtype, await merge(engine, t.input, 'slerp', dtype), 301);
      for (const [i, special] of t.kept)
        expect(got[i], `[${i}] ${special}`).toBe(
          special.startsWith('nan') ? NaN : special === 'inf' ? Infinity : -Infinity,
        );
      const want = decodeFloats(
        dtype,
        encodeFloats(dtype, referenceMerge(t.values, testParams('slerp', 1, 7), [])),
        301,
      );
      const finite = (a: Float64Array) => Array.from(a).map((x, i) => (t.kept.has(i) ? 0 : x));
      expect(finite(got)).toEqual(finite(want));
      expect(finite(got).every((x) => Number.isFinite(x))).toBe(true);
    },
  );

  it('overflowing the f16 output is an error naming the count', async () => {
    const numel = 257;
    const t = randomTensor({ name: 'overflow.slerp', dtype: 'F32', numel, agents: 1, seed: 9 });
    const bytes = t.bytes.map((b, m) => {
      const values = decodeFloats('F32', b, numel);
      for (const i of [3, 50, 256]) values[i] = m === 0 ? 1e6 : 2e6;
      return encodeFloats('F32', values);
    });
    const error = await merge(engine, tensorInput('o', 'F32', bytes), 'slerp', 'F16').catch(
      (e: unknown) => e,
    );
    expect(nonFiniteCause(error)?.overflow, String(error)).toBe(3);
  });
});

describe('ε is the real number: the f32 threshold is the largest f32 ≤ ε', () => {
  it('counts and merges |τ| = fround(1e-3) > 1e-3 as a change at ε = 1e-3', async () => {
    const f = Math.fround(1e-3);
    const bytes = [
      [0, 0, 0, 0],
      [f, -f, 0.0009, 0],
      [0, 0, 0, -f],
    ].map((r) => encodeFloats('F32', r));
    const input = tensorInput('eps', 'F32', bytes);
    const engine = createCpuEngine({ agents: 2 });
    const stats = await engine.analyze(input, 1e-3);
    expect(stats.counts).toEqual([1, 3, 0]);
    const merged = await mergeBytes(engine, input, {
      params: { ...testParams('ram', 2, 1), epsilon: 1e-3 },
      lambdas: [],
      outDtype: 'F32',
    });
    expect(Array.from(decodeFloats('F32', merged, 4))).toEqual([f, -f, 0, -f]);
  });
});

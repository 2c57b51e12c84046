// TIES on the GPU where checkpoints put it: |τ| takes few distinct values, so each agent's threshold
// falls inside a run of thousands of equal magnitudes and only part of them is kept, lowest index
// first, across windows; in bf16 the threshold's first-digit bin holds one key (one histogram pass),
// in the f32 case several (two). Checked against the CPU engine (the f64 reference path) on fresh
// seeded inputs: a tie kept or dropped wrongly is a whole τ off, far outside f32 rounding.
import { afterAll, describe, expect, it } from 'vitest';
import { createCpuEngine } from '../cpu-engine.ts';
import { defaultParams } from '../../methods/defaults.ts';
import { offF32 } from '../../test/tensors.ts';
import { seededRandom } from '../../methods/rng.ts';
import { tensorInput } from '../../methods/tensors.ts';
import { RADIX_DIGITS, topKCount } from '../../methods/select.ts';
import { encodeFloats, type FloatDtype } from '../../format/dtype.ts';
import type { MethodParams } from '../../methods/types.ts';
import { gpuAndCpu, mergedF32, openGpuHarness } from '../../test/gpu-harness.ts';
import { at, must } from '../../io/checked.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 3;
const NUMEL = 60_001;

function f32(bf16Bits: number): number {
  return new Float32Array(new Uint32Array([bf16Bits << 16]).buffer)[0]!;
}

function bf16(x: number): number {
  return new Uint32Array(new Float32Array([x]).buffer)[0]! >>> 16;
}

/** Base in [-1, 1); each agent keeps 30% of it and moves the rest by up to ±0.005, rounded to bf16. */
function tiedBf16(seed: number): Float32Array[] {
  const random = seededRandom(seed);
  const base = new Uint16Array(NUMEL).map(() => bf16(random() * 2 - 1));
  const models = [base];
  for (let t = 0; t < AGENTS; t++)
    models.push(base.map((b) => (random() < 0.3 ? b : bf16(f32(b) + (random() - 0.5) * 0.01))));
  return models.map((m) => Float32Array.from(m, f32));
}

/**
 * f32 whose |τ| share their first radix digit (exponent and top 8 mantissa bits) and differ below it:
 * a base on a coarse grid moved by ±(1 + m·2⁻²⁰)·2⁻⁸, so the select needs its second digit.
 */
function tiedF32(seed: number): Float32Array[] {
  const random = seededRandom(seed);
  const int = (n: number): number => Math.floor(random() * n);
  const base = new Float32Array(NUMEL).map(() => (int(17) - 8) * 2 ** -6);
  const models = [base];
  for (let t = 0; t < AGENTS; t++)
    models.push(
      base.map((b) =>
        random() < 0.3 ? b : b + (random() < 0.5 ? -1 : 1) * (1 + int(8) * 2 ** -20) * 2 ** -8,
      ),
    );
  return models;
}

/** |τ| bits as the engines key them: 0 where the agent holds the base's bits. */
function tauKeys(models: Float32Array[], t: number): number[] {
  const bits = (x: number): number => new Uint32Array(new Float32Array([x]).buffer)[0]!;
  return Array.from(models[t + 1]!, (a, i) => {
    const b = models[0]![i]!;
    return bits(a) === bits(b) ? 0 : bits(Math.fround(a - b)) & 0x7fffffff;
  });
}

/**
 * Agent 0's threshold at density `density`, by a plain sort (independent of the radix select): how
 * many keys equal it, how many of them are kept, and how many distinct keys share its first digit.
 */
function thresholdTies(
  models: Float32Array[],
  density: number,
): { equal: number; kept: number; distinct: number } {
  const keys = tauKeys(models, 0);
  const k = topKCount(density, NUMEL);
  const sorted = keys.filter((key) => key !== 0).sort((a, b) => b - a);
  const threshold = sorted[k - 1]!;
  const above = sorted.filter((key) => key > threshold).length;
  const shift = RADIX_DIGITS[0]!.shift;
  const bin = new Set(keys.filter((key) => key >>> shift === threshold >>> shift));
  return { equal: keys.filter((key) => key === threshold).length, kept: k - above, distinct: bin.size };
}

describe.skipIf(!harness)(`TIES select with many ties ${opened.skip ?? ''}`, () => {
  // bf16: the threshold's first-digit bin holds one key, so one histogram pass settles the select;
  // f32: it holds several, and the second digit settles it.
  const cases: { dtype: FloatDtype; models: (seed: number) => Float32Array[]; distinct: string }[] = [
    { dtype: 'BF16', models: tiedBf16, distinct: 'one' },
    { dtype: 'F32', models: tiedF32, distinct: 'several' },
  ];
  for (const { dtype, models: make, distinct } of cases)
    for (const window of [undefined, 9_000]) {
      it(`keeps exactly the CPU engine's entries (${dtype}, ${window ? 'many windows' : 'one window'})`, async () => {
        const models = make(window ?? 1);
        const input = tensorInput(
          'model.layers.0.mlp.up_proj.weight',
          dtype,
          models.map((m) => encodeFloats(dtype, Float64Array.from(m))),
        );
        const params: MethodParams = { ...defaultParams('ties', AGENTS), density: [0.5, 0.2, 1] };
        // The inputs must really put the threshold inside a long run of ties (else this tests little),
        // in a bin of one key or of several as the case says.
        const ties = thresholdTies(models, 0.5);
        expect(ties.kept).toBeGreaterThan(100);
        expect(ties.equal - ties.kept).toBeGreaterThan(100);
        if (distinct === 'one') expect(ties.distinct).toBe(1);
        else expect(ties.distinct).toBeGreaterThan(1);
        const { gpu, cpu } = await gpuAndCpu(
          must(harness, 'the GPU harness'),
          { agents: AGENTS, maxWindowElements: window },
          input,
          params,
        );
        expect(offF32(gpu, cpu)).toEqual([]);
      });
    }
});

/**
 * Every element ties: a bf16 base in [1, 2) with every agent one ulp above it, so each agent's τ is
 * 2⁻⁷ everywhere and TIES keeps exactly its first k elements. Each agent's cut is put where a
 * tie's rank crosses a boundary of the GPU's tie bits: a tie block (32 elements, one word of bits),
 * a window (not a multiple of a block), or none (the last element of an odd count).
 */
describe.skipIf(!harness)(`TIES cuts at tie-rank boundaries ${opened.skip ?? ''}`, () => {
  const numel = 4_099;
  const window = 1_000;
  const cuts = [
    [31, 32, 33],
    [63, 64, 65],
    [1_000, 1_001, 1_031],
    [2_047, 3_064, 4_098],
  ];

  function allTied(seed: number): Uint8Array[] {
    const random = seededRandom(seed);
    const base = Uint16Array.from({ length: numel }, () => 0x3f80 | (1 + Math.floor(random() * 126)));
    const agents = at(cuts, 0).map(() => base.map((b) => b + 1));
    return [base, ...agents].map((m) => new Uint8Array(m.buffer));
  }

  for (const [i, kept] of cuts.entries())
    it(`keeps the first ${kept.join(', ')} ties as the CPU engine does`, async () => {
      const input = tensorInput('model.layers.0.self_attn.o_proj.weight', 'BF16', allTied(i + 1));
      // k = floor(density·numel): a density just above k/numel gives k.
      const params: MethodParams = {
        ...defaultParams('ties', AGENTS),
        normalize: false,
        density: kept.map((k) => (k + 0.5) / numel),
      };
      expect(params.density.map((d) => topKCount(d, numel))).toEqual(kept);
      const { gpu, cpu } = await gpuAndCpu(
        must(harness, 'the GPU harness'),
        { agents: AGENTS, maxWindowElements: window },
        input,
        params,
      );
      expect(offF32(gpu, cpu)).toEqual([]);
      // One tie more kept by any one agent moves an element by a whole τ (every τ agrees, and they
      // are summed, not averaged): each cut must show in the output.
      for (const t of kept.keys()) {
        const density = params.density.map((d, u) => (u === t ? (at(kept, t) + 1.5) / numel : d));
        const oneMore = await mergedF32(createCpuEngine({ agents: AGENTS }), input, { ...params, density });
        expect(offF32(gpu, oneMore)).not.toEqual([]);
      }
    });
});

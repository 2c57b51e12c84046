// TIES on the GPU where bf16 checkpoints put it: |τ| takes few distinct values, so each agent's
// threshold falls inside a run of thousands of equal magnitudes and only part of them is kept, lowest
// index first, across windows. Checked against the CPU engine (the f64 reference path) on fresh
// seeded inputs: a tie kept or dropped wrongly is a whole τ off, far outside f32 rounding.
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFloats } from '../format/dtype.ts';
import { createCpuEngine } from './cpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { seededRandom, tensorInput } from '../methods/test-tensors.ts';
import { RADIX_DIGITS, startTopK, stepTopK, topKCount } from '../methods/select.ts';
import type { MethodParams } from '../methods/types.ts';
import { createGpuEngine } from './gpu-engine.ts';
import { openGpuHarness } from '../test/gpu-harness.ts';
import type { MergeEngine, TensorInput } from '../methods/merge-types.ts';

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
function tiedModels(seed: number): Uint16Array[] {
  const random = seededRandom(seed);
  const base = new Uint16Array(NUMEL).map(() => bf16(random() * 2 - 1));
  const models = [base];
  for (let t = 0; t < AGENTS; t++)
    models.push(base.map((b) => (random() < 0.3 ? b : bf16(f32(b) + (random() - 0.5) * 0.01))));
  return models;
}

/** Agent 0's threshold at density `density`: how many keys equal it, and how many of them are kept. */
function thresholdTies(models: Uint16Array[], density: number): { equal: number; kept: number } {
  const keys = Array.from(models[1]!, (a, i) => {
    const b = models[0]![i]!;
    return a === b ? 0 : new Uint32Array(new Float32Array([f32(a) - f32(b)]).buffer)[0]! & 0x7fffffff;
  });
  let state = startTopK(topKCount(density, NUMEL), NUMEL);
  RADIX_DIGITS.forEach(({ shift, bits }, digit) => {
    const histogram = new Array<number>(1 << bits).fill(0);
    for (const key of keys)
      if (key !== 0 && key >>> (shift + bits) === state.prefix >>> (shift + bits))
        histogram[(key >>> shift) & ((1 << bits) - 1)]!++;
    state = stepTopK(state, histogram, digit);
  });
  return { equal: keys.filter((key) => key === state.threshold).length, kept: state.tiesToKeep };
}

async function merged(engine: MergeEngine, input: TensorInput, params: MethodParams): Promise<Float64Array> {
  const parts: Uint8Array[] = [];
  await engine.merge(input, {
    params,
    lambdas: [],
    outDtype: 'F32',
    emit: async (b) => void parts.push(b.slice()),
  });
  return decodeFloats('F32', Buffer.concat(parts), input.numel);
}

describe.skipIf(!harness)(`TIES select with many ties ${opened.skip ?? ''}`, () => {
  for (const window of [undefined, 9_000]) {
    it(`keeps exactly the CPU engine's entries (${window ? 'many windows' : 'one window'})`, async () => {
      const models = tiedModels(window ?? 1);
      const input = tensorInput(
        'model.layers.0.mlp.up_proj.weight',
        'BF16',
        models.map((m) => new Uint8Array(m.buffer)),
      );
      const params: MethodParams = { ...defaultParams('ties', AGENTS), density: [0.5, 0.2, 1] };
      // The inputs must really put the threshold inside a long run of ties (else this tests little).
      const { equal, kept } = thresholdTies(models, 0.5);
      expect(kept).toBeGreaterThan(100);
      expect(equal - kept).toBeGreaterThan(100);
      const gpu = createGpuEngine(harness!.device, {
        agents: AGENTS,
        adapterDescription: harness!.adapterDescription,
        maxWindowElements: window,
        poisonOutput: true,
      });
      try {
        const got = await harness!.run(() => merged(gpu, input, params));
        const want = await merged(
          createCpuEngine({ agents: AGENTS, maxWindowElements: window }),
          input,
          params,
        );
        const off: string[] = [];
        want.forEach((w, i) => {
          if (!(Math.abs(got[i]! - w) <= 2 ** -20 * Math.max(1, Math.abs(w))))
            off.push(`[${i}] ${got[i]} ≠ ${w}`);
        });
        expect(off.slice(0, 5)).toEqual([]);
      } finally {
        gpu.destroy();
      }
    });
  }
});

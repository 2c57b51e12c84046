// The TIES kernel as it merges: two element pairs per invocation, each agent's ties kept below its
// row's cutoff (topk_scan), for the top-k (TIES) and for Breadcrumbs' outliers too. Checked against
// the CPU engine (the f64 reference path) on fresh seeded bf16 inputs whose |τ| take few values, so
// every threshold falls inside a run of ties; windows leave 0 to 3 elements over a multiple of four,
// so a window's last invocation merges two pairs, one and a half, one, or half of one. A tie kept or
// dropped wrongly moves an element by a whole τ, far outside f32 rounding; an element never written
// stays the poisoned NaN.
import { afterAll, describe, expect, it } from 'vitest';
import { defaultParams } from '../../methods/defaults.ts';
import { bandCounts } from '../../methods/band.ts';
import { topKCount } from '../../methods/select.ts';
import { offF32 } from '../../test/tensors.ts';
import { seededRandom } from '../../methods/rng.ts';
import { tensorInput } from '../../methods/tensors.ts';
import { decodeFloats, encodeFloats } from '../../format/dtype.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import { gpuAndCpu, openGpuHarness } from '../../test/gpu-harness.ts';
import { at, must } from '../../io/checked.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 3;
const NUMEL = 20_003;

/** bf16 models: a base on a grid of 2⁻⁸, each agent moved by ±1–3 of 2⁻¹⁰ in about 60% of elements. */
function models(seed: number): Float64Array[] {
  const random = seededRandom(seed);
  const base = Float64Array.from({ length: NUMEL }, () => Math.round((random() - 0.5) * 128) / 256);
  const agents = Array.from({ length: AGENTS }, () =>
    base.map((b) =>
      random() < 0.4 ? b : b + (random() < 0.5 ? -1 : 1) * (1 + Math.floor(random() * 3)) * 2 ** -10,
    ),
  );
  // Stored as bf16 and read back, so the keys below are the engines' keys.
  return [base, ...agents].map((m) => decodeFloats('BF16', encodeFloats('BF16', m), NUMEL));
}

/** Agent t's |τ| keys as the engines compute them: f32 bits of the difference, 0 where unchanged. */
function keys(m: Float64Array[], t: number): number[] {
  const bits = (x: number): number => new Uint32Array(new Float32Array([x]).buffer)[0]!;
  return Array.from(at(m, t + 1), (a, i) => {
    const b = at(at(m, 0), i);
    return a === b ? 0 : bits(Math.fround(a - b)) & 0x7fffffff;
  });
}

/** Whether the top `k` of `sorted` (descending) ends inside a run of equal keys, part of it kept. */
function cutsTies(sorted: readonly number[], k: number): boolean {
  const threshold = at(sorted, k - 1);
  return threshold !== 0 && sorted[k] === threshold && sorted[k - 2] === threshold;
}

const METHODS: MethodName[] = ['ties', 'breadcrumbs_ties', 'breadcrumbs'];

describe.skipIf(!harness)(`TIES kernel: ties cut at each row's cutoff ${opened.skip ?? ''}`, () => {
  for (const [k, method] of METHODS.entries())
    for (const window of [undefined, 4_000, 4_001, 4_002, 4_003])
      it(`${method} equals the CPU engine (${window ? `windows of ${window}` : 'one window'})`, async () => {
        const m = models(10 * k + (window ?? 0));
        const input = tensorInput(
          'model.layers.3.mlp.down_proj.weight',
          'BF16',
          m.map((v) => encodeFloats('BF16', v)),
        );
        const params: MethodParams = {
          ...defaultParams(method, AGENTS),
          density: [0.5, 0.3, 0.45],
          ...(method === 'ties' ? {} : { gamma: [0.05, 0.1, 0.02] }),
        };
        // Every threshold, the outliers' included, must cut a run of ties (else this tests little).
        for (let t = 0; t < AGENTS; t++) {
          const sorted = keys(m, t).sort((a, b) => b - a);
          const density = at(params.density, t);
          if (method === 'ties') expect(cutsTies(sorted, topKCount(density, NUMEL))).toBe(true);
          else {
            const { outliers, kept } = bandCounts(density, at(must(params.gamma, 'gamma'), t), NUMEL);
            expect(cutsTies(sorted, outliers)).toBe(true);
            expect(cutsTies(sorted, outliers + kept)).toBe(true);
          }
        }
        const { gpu, cpu } = await gpuAndCpu(
          must(harness, 'the GPU harness'),
          { agents: AGENTS, maxWindowElements: window },
          input,
          params,
        );
        expect(offF32(gpu, cpu)).toEqual([]);
      });
});

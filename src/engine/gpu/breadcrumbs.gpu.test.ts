// Model Breadcrumbs where ties decide: |τ| takes four values, so both cuts of every agent (after its
// outliers, and after the entries it keeps) fall inside runs of thousands of equal magnitudes, and only
// part of each run is dropped or kept, lowest index first, across windows. The CPU engine (radix select
// over windows) must equal the whole-tensor f64 reference (a sort), and the GPU the CPU engine: a tie
// kept or dropped wrongly is a whole τ off, far outside f32 rounding.
import { must } from '../../io/checked.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats } from '../../format/dtype.ts';
import { bandCounts } from '../../methods/band.ts';
import { defaultParams } from '../../methods/defaults.ts';
import { referenceMerge } from '../../methods/reference.ts';
import { mergeBytes, offF32 } from '../../test/tensors.ts';
import { seededRandom } from '../../methods/rng.ts';
import { tensorInput } from '../../methods/tensors.ts';
import type { MergeEngine } from '../contract.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import type { MethodParams } from '../../methods/types.ts';
import { openGpuHarness, withGpuEngine } from '../../test/gpu-harness.ts';
import { createCpuEngine } from '../cpu-engine.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 3;
const NUMEL = 60_001;

/** Base on a grid of quarters, each agent moved by k/64 with k in −3..3: every value exact in f32. */
function tiedModels(seed: number): Float64Array[] {
  const random = seededRandom(seed);
  const base = Float64Array.from({ length: NUMEL }, () => Math.floor(random() * 32 - 16) / 4);
  return [
    base,
    ...Array.from({ length: AGENTS }, () => base.map((b) => b + Math.floor(random() * 7 - 3) / 64)),
  ];
}

async function merged(engine: MergeEngine, input: TensorInput, params: MethodParams): Promise<Uint8Array> {
  return mergeBytes(engine, input, { params, lambdas: [], outDtype: 'F32' });
}

describe.skipIf(!harness)(`Model Breadcrumbs with many ties ${opened.skip ?? ''}`, () => {
  for (const method of ['breadcrumbs', 'breadcrumbs_ties'] as const)
    for (const window of [undefined, 9_000]) {
      it(`${method}: the reference's entries on CPU and GPU (${window ? 'many windows' : 'one window'})`, async () => {
        const models = tiedModels(window ?? 7);
        const input = tensorInput(
          'model.layers.0.mlp.up_proj.weight',
          'F32',
          models.map((m) => encodeFloats('F32', m)),
        );
        const params: MethodParams = {
          ...defaultParams(method, AGENTS),
          weights: [1, 0.5, 0.75],
          density: [0.5, 0.3, 0.6],
          gamma: [0.1, 0.25, 0.05],
        };
        // Both cuts of every agent must fall inside a run of equal magnitudes (else this tests little).
        models.slice(1).forEach((agent, t) => {
          const sorted = agent.map((x, i) => Math.abs(x - models[0]![i]!)).sort((a, b) => b - a);
          const { outliers, kept } = bandCounts(params.density[t]!, params.gamma![t]!, NUMEL);
          for (const cut of [outliers, outliers + kept]) expect(sorted[cut - 1]).toBe(sorted[cut]);
        });
        const want = encodeFloats(
          'F32',
          referenceMerge(
            { name: input.name, dtype: 'F32', base: models[0]!, agents: models.slice(1) },
            params,
            [],
          ),
        );
        const cpu = await merged(
          createCpuEngine({ agents: AGENTS, maxWindowElements: window }),
          input,
          params,
        );
        expect(cpu).toEqual(want);
        const got = await withGpuEngine(
          must(harness, 'the GPU harness'),
          { agents: AGENTS, maxWindowElements: window },
          (gpu) => merged(gpu, input, params),
        );
        expect(offF32(decodeFloats('F32', got, NUMEL), decodeFloats('F32', want, NUMEL))).toEqual([]);
      });
    }
});

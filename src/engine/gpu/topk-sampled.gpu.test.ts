// The sampled TIES select on the GPU (topk_sample / topk_count, src/engine/gpu/topk-select.ts): every route
// a top-k can take — exact from a sample that took the whole tensor, settled by one count pass from
// its counts at the ends of the sample's bracket or from the keys it collected between them, or sent
// on to the radix select after a miss, where more than two dispatches would be needed, or for f32 —
// must keep exactly the CPU engine's entries on fresh seeded bf16 inputs, and each case must really
// take the route it is about (the engine reports them).
import { afterAll, describe, expect, it } from 'vitest';
import type { SelectRoute, TieSpan } from './topk-select.ts';
import { defaultParams } from '../../methods/defaults.ts';
import { offF32 } from '../../test/tensors.ts';
import { seededRandom } from '../../methods/rng.ts';
import { tensorInput } from '../../methods/tensors.ts';
import { bf16ToF32, encodeFloats, f32ToBf16, type FloatDtype } from '../../format/dtype.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import { gpuAndCpu, openGpuHarness } from '../../test/gpu-harness.ts';
import { must } from '../../io/checked.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

/**
 * bf16 models: a base about N(0, 0.03²) and agents that change a share of it by `steps` bf16 ulps
 * each (1–`steps`, either sign), so |τ| takes few distinct values with long runs of ties. With
 * `quietHead`, the first `quietHead` elements change by one ulp only and much more rarely, so a
 * sample of the first window misjudges the whole tensor.
 */
function rlModels(numel: number, agents: number, steps: number, seed: number, quietHead = 0): Uint16Array[] {
  const random = seededRandom(seed);
  const base = Uint16Array.from({ length: numel }, () =>
    f32ToBf16((random() + random() + random() - 1.5) * 0.05),
  );
  const models = [base];
  for (let t = 0; t < agents; t++)
    models.push(
      base.map((b, i) => {
        const quiet = i < quietHead;
        if (random() >= (quiet ? 0.05 : 0.3 + 0.15 * t)) return b;
        const n = quiet ? 1 : 1 + Math.floor(random() * steps);
        const value = bf16ToF32(b);
        return f32ToBf16(value + (random() < 0.5 ? -n : n) * Math.max(Math.abs(value), 1e-30) * 2 ** -7);
      }),
    );
  return models;
}

interface Case {
  name: string;
  method: MethodName;
  numel: number;
  agents: number;
  steps: number;
  window?: number;
  quietHead?: number;
  dtype?: FloatDtype;
  /** Room for the keys the count pass collects (the engine's maxCollected). */
  maxCollected?: number;
  /** The routes the searching top-ks take (trivial ones aside), or with `some`, a route one of them takes. */
  routes: readonly SelectRoute[];
  some?: boolean;
  /** Routes none of them may take. */
  never?: readonly SelectRoute[];
  /** Some top-k keeps part of its ties and the count pass finds the chunk of its first tie not kept. */
  spans?: boolean;
}

const cases: Case[] = [
  {
    name: 'a small tensor, exact from the sample',
    method: 'ties',
    numel: 30_001,
    agents: 3,
    steps: 2,
    routes: ['sample'],
  },
  {
    name: 'runs of ties, one count pass',
    method: 'ties',
    numel: 150_000,
    agents: 3,
    steps: 1,
    routes: ['bracket'],
    some: true,
    spans: true,
    never: ['radix'],
  },
  {
    name: 'six agents: rows 0–3 and 4–5 in two dispatches',
    method: 'ties',
    numel: 150_000,
    agents: 6,
    steps: 1,
    routes: ['bracket'],
    some: true,
    spans: true,
    never: ['radix'],
  },
  {
    name: 'a few distinct |τ| around the thresholds: settled on a run at one end of the bracket',
    method: 'ties',
    numel: 150_000,
    agents: 3,
    steps: 8,
    routes: ['bracket'],
    some: true,
    spans: true,
    never: ['radix'],
  },
  {
    name: 'hundreds of distinct |τ| around the thresholds: the keys between, sorted on the host',
    method: 'ties',
    numel: 150_000,
    agents: 3,
    steps: 96,
    routes: ['between'],
    some: true,
    never: ['radix'],
  },
  {
    name: 'hundreds of distinct |τ|, several windows: keys between collected from every window',
    method: 'ties',
    numel: 150_001,
    agents: 3,
    steps: 96,
    window: 40_000,
    routes: ['between'],
    some: true,
    never: ['radix'],
  },
  {
    name: 'hundreds of distinct |τ|, more keys between than the room for them: the radix select',
    method: 'ties',
    numel: 150_000,
    agents: 3,
    steps: 96,
    maxCollected: 300,
    routes: ['radix'],
    some: true,
    never: ['between'],
  },
  {
    name: 'Breadcrumbs, hundreds of distinct |τ|: four rows collecting at once',
    method: 'breadcrumbs_ties',
    numel: 150_000,
    agents: 2,
    steps: 96,
    routes: ['between'],
    some: true,
    never: ['radix'],
  },
  {
    name: 'several windows: ties marked only in the chunk of the first tie not kept',
    method: 'ties',
    numel: 150_000,
    agents: 2,
    steps: 1,
    window: 40_000,
    routes: ['bracket'],
    some: true,
    spans: true,
  },
  {
    name: 'a first window unlike the rest: the bracket misses, the radix select settles it',
    method: 'ties',
    numel: 150_000,
    agents: 2,
    steps: 2,
    window: 40_000,
    quietHead: 40_000,
    routes: ['radix'],
    some: true,
  },
  {
    name: 'Breadcrumbs, 2 agents: four rows in one dispatch, ties of both thresholds marked in chunks',
    method: 'breadcrumbs_ties',
    numel: 150_000,
    agents: 2,
    steps: 1,
    routes: ['bracket'],
    some: true,
    spans: true,
    never: ['radix'],
  },
  {
    name: 'Breadcrumbs, 5 agents: ten rows in three dispatches',
    method: 'breadcrumbs_ties',
    numel: 150_000,
    agents: 5,
    steps: 1,
    routes: ['bracket'],
    some: true,
    never: ['radix'],
  },
  {
    name: 'Breadcrumbs, 7 agents: fourteen rows would take four dispatches, so the radix select',
    method: 'breadcrumbs_ties',
    numel: 150_000,
    agents: 7,
    steps: 1,
    routes: ['radix'],
  },
  {
    name: 'an odd count: the last vec4 of each slot half past the end',
    method: 'ties',
    numel: 150_003,
    agents: 3,
    steps: 1,
    routes: ['bracket'],
    some: true,
    spans: true,
    never: ['radix'],
  },
  {
    name: 'f32: radix',
    method: 'ties',
    numel: 150_000,
    agents: 3,
    steps: 2,
    dtype: 'F32',
    routes: ['radix'],
  },
];

describe.skipIf(!harness)(`sampled TIES select ${opened.skip ?? ''}`, () => {
  for (const [i, c] of cases.entries())
    it(`${c.name}: the CPU engine's entries`, async () => {
      const dtype = c.dtype ?? 'BF16';
      const models = rlModels(c.numel, c.agents, c.steps, 40 + i, c.quietHead);
      const bytes = models.map((m) =>
        dtype === 'BF16' ? new Uint8Array(m.buffer) : encodeFloats('F32', Float64Array.from(m, bf16ToF32)),
      );
      const input = tensorInput('model.layers.3.mlp.down_proj.weight', dtype, bytes);
      const params: MethodParams = {
        ...defaultParams(c.method, c.agents),
        density: Array.from({ length: c.agents }, (_, t) => [0.2, 0.5, 0.35, 0.9, 0.05][t % 5] ?? 0.5),
      };
      const seen: SelectRoute[] = [];
      const spans: TieSpan[] = [];
      const { gpu, cpu } = await gpuAndCpu(
        must(harness, 'the GPU harness'),
        {
          agents: c.agents,
          maxWindowElements: c.window,
          maxCollected: c.maxCollected,
          onSelectRoutes: (_, r, s) => {
            seen.push(...r);
            spans.push(...s.filter((x) => x !== undefined));
          },
        },
        input,
        params,
      );
      expect(offF32(gpu, cpu)).toEqual([]);
      const taken = new Set(seen.filter((r) => r !== 'trivial'));
      if (c.some) expect([...taken]).toEqual(expect.arrayContaining([...c.routes]));
      else expect(taken).toEqual(new Set(c.routes));
      for (const r of c.never ?? []) expect([...taken]).not.toContain(r);
      if (c.spans) expect(spans.length).toBeGreaterThan(0);
      for (const span of spans) {
        expect(span.end).toBeGreaterThan(span.first);
        expect(span.end).toBeLessThanOrEqual(c.numel);
      }
    });
});

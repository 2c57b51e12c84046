// Tensor-local RAM+ on the GPU takes its λ from the counts of its own pass (overlap_count.wgsl). With α
// far above ρ, λ = 1 + r·shared/unique follows every count: one unique element more or less moves λ
// by about 1/unique, and the merged unique changes by far more than f32 rounding. Checked against the
// CPU engine (the f64 reference path) on fresh seeded bf16 inputs, over one window and many.
import { must } from '../../io/checked.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../../format/dtype.ts';
import { defaultParams } from '../../methods/defaults.ts';
import { offF32 } from '../../test/tensors.ts';
import { seededRandom } from '../../methods/rng.ts';
import { tensorInput } from '../../methods/tensors.ts';
import type { MethodParams } from '../../methods/types.ts';
import { gpuAndCpu, openGpuHarness } from '../../test/gpu-harness.ts';
import { mergeBytes } from '../../test/tensors.ts';
import { createCpuEngine } from '../cpu-engine.ts';
import { createGpuEngine } from './gpu-engine.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 3;
const NUMEL = 50_001;

/** Half the elements changed by every agent, a few by one agent alone, some by two, the rest by none. */
function models(seed: number): { bytes: Uint8Array[]; unique: number[]; changed: number[] } {
  const random = seededRandom(seed);
  const base = new Uint16Array(NUMEL).map(() => f32ToBf16((random() * 2 - 1) / 16));
  const agents = Array.from({ length: AGENTS }, () => base.slice());
  const unique = new Array<number>(AGENTS).fill(0);
  const changed = new Array<number>(AGENTS).fill(0);
  const move = (bits: number): number => {
    const value = bf16ToF32(bits);
    const steps = (1 + Math.floor(random() * 8)) * (random() < 0.5 ? -1 : 1);
    return f32ToBf16(value + steps * Math.abs(value) * 2 ** -7);
  };
  for (let i = 0; i < NUMEL; i++) {
    const r = random();
    const alone = Math.floor((r - 0.5) / 0.003);
    const who =
      r < 0.5 ? [0, 1, 2] : alone < AGENTS ? [alone] : r < 0.7 ? [0, 1, 2].filter((_, t) => t !== i % 3) : [];
    for (const t of who) {
      const agent = agents[t];
      const b = base[i];
      if (agent === undefined || b === undefined || b === 0) continue;
      agent[i] = move(b);
    }
    const moved = agents.flatMap((a, t) => (a[i] === base[i] ? [] : [t]));
    for (const t of moved) {
      changed[t] = (changed[t] ?? 0) + 1;
      if (moved.length === 1) unique[t] = (unique[t] ?? 0) + 1;
    }
  }
  return { bytes: [base, ...agents].map((m) => new Uint8Array(m.buffer)), unique, changed };
}

describe.skipIf(!harness)(`ramplus_tl λ from exact counts ${opened.skip ?? ''}`, () => {
  for (const window of [undefined, 7_000]) {
    it(`merges as the CPU engine with λ far from the clip (${window ? 'many windows' : 'one window'})`, async () => {
      const set = models(window ?? 5);
      const input = tensorInput('model.layers.3.mlp.down_proj.weight', 'BF16', set.bytes);
      const params: MethodParams = { ...defaultParams('ramplus_tl', AGENTS), r: 1, alpha: 1e6 };
      // Each agent has a few hundred unique changes beside tens of thousands shared: ρ ≈ 100 < α.
      set.unique.forEach((u, t) => {
        expect(u).toBeGreaterThan(100);
        expect(((set.changed[t] ?? 0) - u) / u).toBeLessThan(params.alpha);
      });
      const { gpu, cpu } = await gpuAndCpu(
        must(harness, 'the GPU harness'),
        { agents: AGENTS, maxWindowElements: window },
        input,
        params,
      );
      expect(offF32(gpu, cpu)).toEqual([]);
    });
  }

  it('reports the λ it applied in the tensor, as the CPU engine does, from the counts', async () => {
    const set = models(9);
    const input = tensorInput('model.layers.4.mlp.up_proj.weight', 'BF16', set.bytes);
    const params: MethodParams = { ...defaultParams('ramplus_tl', AGENTS), r: 1, alpha: 1e6 };
    const gpu = createGpuEngine(must(harness, 'the GPU harness').device, {
      agents: AGENTS,
      adapterDescription: 'test',
    });
    try {
      const reported: (readonly number[])[] = [];
      for (const engine of [gpu, createCpuEngine({ agents: AGENTS })]) {
        const told: (readonly number[])[] = [];
        await harness!.run(() =>
          mergeBytes(engine, input, {
            params,
            lambdas: [1, 1, 1],
            outDtype: 'BF16',
            onTensorLambdas: (l) => told.push(l),
          }),
        );
        expect(told, engine.kind).toHaveLength(1);
        reported.push(told[0]!);
      }
      // ρ ≈ 100 with r = 1: λ far from 1, and the GPU's from its own counts equal to the CPU's.
      const [fromGpu, fromCpu] = reported;
      fromCpu!.forEach((l, t) => {
        expect(l).toBeGreaterThan(10);
        expect(fromGpu![t], `agent ${t + 1}`).toBeCloseTo(l, 12);
      });
    } finally {
      gpu.destroy();
    }
  });
});

// The mask kernel (shaders/mask.wgsl) through MaskRenderer against the CPU reference referenceMask on
// fresh seeded tensors: every block counter equal, for whole-tensor views with multi-element blocks,
// zoomed views down to single elements, one and many windows, bf16 / f16 / f32, 2 to 4 agents, with
// NaN and ±Inf placed in them; the grid's sums equal the statistics reference of the same tensor; and
// the reference equals a small grid counted by hand.
import { afterAll, describe, expect, it } from 'vitest';
import type { FloatDtype } from '../../format/dtype.ts';
import { referenceMask } from '../../methods/mask.ts';
import { injectNonFinite } from '../../test/nonfinite-tensors.ts';
import { referenceStats, type TensorValues } from '../../methods/reference.ts';
import { randomTensor, type TestTensor } from '../../test/tensors.ts';
import { tensorInput } from '../../methods/tensors.ts';
import { MaskRenderer, type MaskResult } from '../../driver/tensor-view.ts';
import { must } from '../../io/checked.ts';
import { maskGeometry, maskLayout, summarizeMask, type MaskView } from '../../methods/mask-geometry.ts';
import { openGpuHarness } from '../../test/gpu-harness.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

interface Case {
  dtype: FloatDtype;
  agents: number;
  shape: number[];
  view: MaskView | null;
  max: [number, number];
  window?: number;
}

const NON_FINITE_CASES: Case[] = [
  { dtype: 'BF16', agents: 3, shape: [37, 53], view: null, max: [8, 8], window: 301 },
  {
    dtype: 'F16',
    agents: 2,
    shape: [4, 5, 129],
    view: { row0: 3, col0: 7, rows: 12, cols: 100 },
    max: [5, 20],
  },
  { dtype: 'F32', agents: 4, shape: [30, 17], view: null, max: [64, 64], window: 77 },
];

const CASES: Case[] = [
  { dtype: 'BF16', agents: 3, shape: [37, 53], view: null, max: [8, 8], window: 301 },
  {
    dtype: 'BF16',
    agents: 3,
    shape: [37, 53],
    view: { row0: 3, col0: 10, rows: 20, cols: 30 },
    max: [64, 64],
  },
  { dtype: 'F16', agents: 2, shape: [4, 5, 129], view: null, max: [7, 40], window: 1000 },
  { dtype: 'F32', agents: 4, shape: [1031], view: null, max: [16, 100] },
  {
    dtype: 'F32',
    agents: 4,
    shape: [300, 17],
    view: { row0: 250, col0: 16, rows: 80, cols: 9 },
    max: [3, 3],
    window: 77,
  },
];

/** The kernel's grid of `t` for case `c`, every buffer destroyed after. */
async function gpuMask(t: TestTensor, c: Case): Promise<MaskResult> {
  const gpu = must(harness, 'GPU harness');
  const renderer = new MaskRenderer(gpu.device, c.agents);
  try {
    return await gpu.run(() =>
      renderer.compute({
        tensor: t.input,
        shape: c.shape,
        view: c.view,
        maxRows: c.max[0],
        maxCols: c.max[1],
        epsilon: 1e-5,
        windowElements: c.window,
      }),
    );
  } finally {
    renderer.destroy();
  }
}

describe.skipIf(!harness)(`mask kernel on ${harness?.adapterDescription ?? 'no adapter'}`, () => {
  it.each(CASES.map((c, i) => [i, c] as const))('case %i equals the CPU reference', async (i, c) => {
    const numel = c.shape.reduce((a, b) => a * b, 1);
    const t = randomTensor({ name: `mask${i}`, dtype: c.dtype, numel, agents: c.agents, seed: 9100 + i });
    const result = await gpuMask(t, c);
    const g = maskGeometry(c.shape, c.view, c.max[0], c.max[1]);
    expect(result.geometry).toEqual(g);
    const expected = referenceMask(t.values, g, 1e-5);
    expect(expected.some((v) => v > 0)).toBe(true);
    expect(Array.from(result.grid)).toEqual(Array.from(expected));
    // Only the viewed rows are read, each once.
    expect(result.elementsRead).toBe(g.rows * g.tensorCols);
    if (c.window !== undefined) expect(result.windows).toBeGreaterThan(1);
    if (c.view === null) {
      const stats = referenceStats(t.values, 1e-5);
      const sum = summarizeMask(result.grid, g, c.agents);
      expect(sum.unchanged).toBe(stats.counts[0]);
      expect(sum.unique).toEqual(stats.overlap.map((row) => row[0]));
      expect(sum.changed).toEqual(stats.changed);
      expect(sum.shared + sum.conflict).toBe(stats.counts.slice(2).reduce((a, b) => a + b, 0));
      expect(sum.conflict).toBe(stats.signConflicts);
      expect(sum.nonFinite).toBe(0);
    }
    expect(must(harness, 'GPU harness').liveBuffers()).toEqual([]);
  });

  // SPEC.md "Non-finite values": NaN (several payloads) and ±Inf written into random models of fresh
  // tensors; where the bits differ the element is non-finite and in no class, where every model holds
  // the same special bits it is unchanged.
  it.each(NON_FINITE_CASES.map((c, i) => [i, c] as const))(
    'non-finite case %i equals the CPU reference and counts each placed element once',
    async (i, c) => {
      const numel = c.shape.reduce((a, b) => a * b, 1);
      const models = Array.from({ length: c.agents + 1 }, (_, m) => m);
      const random = randomTensor({
        name: `nf${i}`,
        dtype: c.dtype,
        numel,
        agents: c.agents,
        seed: 9300 + i,
      });
      const t = injectNonFinite(random, { differ: 40, kept: 25, models, seed: 9400 + i });
      const result = await gpuMask(t, c);
      const g = result.geometry;
      const layout = maskLayout(c.agents);
      const expected = referenceMask(t.values, g, 1e-5);
      expect(Array.from(result.grid)).toEqual(Array.from(expected));
      if (c.window !== undefined) expect(result.windows).toBeGreaterThan(1);
      const sum = summarizeMask(result.grid, g, c.agents);
      // Placed elements inside the view, counted from the injection, not from the code under test.
      const inView = [...t.differAt].filter((e) => {
        const r = Math.floor(e / g.tensorCols) - g.row0;
        const col = (e % g.tensorCols) - g.col0;
        return r >= 0 && r < g.rows && col >= 0 && col < g.cols;
      });
      expect(inView.length).toBeGreaterThan(0);
      expect(sum.nonFinite).toBe(inView.length);
      if (c.view === null) {
        const stats = referenceStats(t.values, 1e-5);
        expect(stats.nonFinite).toBe(t.nonFinite);
        expect(sum.unchanged).toBe(stats.counts[0]);
        expect(sum.changed).toEqual(stats.changed);
        expect(sum.conflict).toBe(stats.signConflicts);
      }
      if (g.blockRows === 1 && g.blockCols === 1) {
        // One element per block: the counter is 1 exactly at the placed elements, and such a block
        // holds nothing else.
        for (let gy = 0; gy < g.gridRows; gy++)
          for (let gx = 0; gx < g.gridCols; gx++) {
            const cell = (gy * g.gridCols + gx) * layout.stride;
            const e = (g.row0 + gy) * g.tensorCols + g.col0 + gx;
            const counters = Array.from(result.grid.subarray(cell, cell + layout.stride));
            const placed = t.differAt.has(e);
            expect(counters[layout.nonFinite], `element ${e}`).toBe(placed ? 1 : 0);
            if (placed) expect(counters.reduce((a, b) => a + b, 0)).toBe(1);
            if (t.kept.has(e)) expect(counters.every((v) => v === 0)).toBe(true);
          }
      }
      expect(must(harness, 'GPU harness').liveBuffers()).toEqual([]);
    },
  );

  it('counts a small tensor as counted by hand, on the CPU reference and the GPU', async () => {
    // 2 agents, f32, 2 × 3 elements, one element per block; ε = 1e-5.
    const base = [1, 1, Infinity, 0, -Infinity, 0];
    const agent0 = [1, NaN, Infinity, 0.5, 2, 0.25];
    const agent1 = [1, 1, Infinity, -0.5, -Infinity, 0];
    const values: TensorValues = {
      name: 'hand',
      dtype: 'F32',
      base: Float64Array.from(base),
      agents: [Float64Array.from(agent0), Float64Array.from(agent1)],
    };
    const bytes = [base, agent0, agent1].map((v) => new Uint8Array(Float32Array.from(v).buffer));
    const c: Case = { dtype: 'F32', agents: 2, shape: [2, 3], view: null, max: [64, 64] };
    // Per block: unique to 0, unique to 1, shared, conflict, non-finite, changed by 0, changed by 1.
    const byHand = [
      [0, 0, 0, 0, 0, 0, 0], // all equal: unchanged
      [0, 0, 0, 0, 1, 0, 0], // NaN in agent 0 only: non-finite
      [0, 0, 0, 0, 0, 0, 0], // +Inf in every model: unchanged
      [0, 0, 0, 1, 0, 1, 1], // τ = +0.5 and −0.5: shared with a sign conflict
      [0, 0, 0, 0, 1, 0, 0], // −Inf in base and agent 1, 2 in agent 0: non-finite
      [1, 0, 0, 0, 0, 1, 0], // τ = 0.25 in agent 0 only: unique to it
    ].flat();
    const g = maskGeometry(c.shape, null, 64, 64);
    expect(Array.from(referenceMask(values, g, 1e-5))).toEqual(byHand);
    const gpu = await gpuMask({ values, bytes, input: tensorInput('hand', 'F32', bytes) }, c);
    expect(Array.from(gpu.grid)).toEqual(byHand);
    expect(summarizeMask(gpu.grid, g, 2)).toMatchObject({ unchanged: 2, nonFinite: 2, conflict: 1 });
  });

  it('zoomed to single elements, each block holds exactly its element', async () => {
    const shape = [9, 11];
    const t = randomTensor({ name: 'single', dtype: 'BF16', numel: 99, agents: 3, seed: 77 });
    const renderer = new MaskRenderer(harness!.device, 3);
    try {
      const result = await harness!.run(() =>
        renderer.compute({ tensor: t.input, shape, view: null, maxRows: 64, maxCols: 64, epsilon: 1e-5 }),
      );
      expect(result.geometry).toMatchObject({ blockRows: 1, blockCols: 1, gridRows: 9, gridCols: 11 });
      expect(Array.from(result.grid)).toEqual(Array.from(referenceMask(t.values, result.geometry, 1e-5)));
    } finally {
      renderer.destroy();
    }
  });
});

describe.skipIf(!harness)('mask drawing', () => {
  it('paints each single-element block in its class colour (non-finite included) and blocks of many in their mix', async () => {
    const palette = [
      [0.96, 0.96, 0.97, 1],
      [0.36, 0.4, 0.46, 1],
      [0.7, 0.15, 0.12, 1],
      [0.29, 0.08, 0.55, 1],
      [0, 0.45, 0.7, 1],
      [0.9, 0.62, 0, 1],
      [0, 0.62, 0.45, 1],
    ] as const;
    const shape = [6, 8];
    const t = injectNonFinite(
      randomTensor({ name: 'draw', dtype: 'BF16', numel: 48, agents: 3, seed: 4242 }),
      {
        differ: 5,
        kept: 3,
        models: [0, 1, 2, 3],
        seed: 4243,
      },
    );
    // Grid counter k (unique 0..2, shared, conflict, non-finite) to its palette colour.
    const colourOf = (k: number) => must(palette[k < 3 ? 4 + k : k - 2], `colour of class ${k}`);
    const renderer = new MaskRenderer(harness!.device, 3);
    try {
      // 48 single-element blocks drawn 4 × 4 pixels each: every pixel is one class's colour.
      const single = await harness!.run(async () => {
        await renderer.compute({
          tensor: t.input,
          shape,
          view: null,
          maxRows: 64,
          maxCols: 64,
          epsilon: 1e-5,
        });
        return renderer.drawPixels(32, 24, palette);
      });
      const grid = referenceMask(t.values, maskGeometry(shape, null, 64, 64), 1e-5);
      let seen = new Set<string>();
      let nonFinitePixels = 0;
      for (let y = 0; y < 24; y++)
        for (let x = 0; x < 32; x++) {
          const cell = (Math.floor(y / 4) * 8 + Math.floor(x / 4)) * maskLayout(3).stride;
          const k = [0, 1, 2, 3, 4, 5].find((c) => grid[cell + c]! > 0);
          const colour = k === undefined ? palette[0] : colourOf(k);
          if (k === 5) nonFinitePixels++;
          const at = (y * 32 + x) * 4;
          const got = Array.from(single.subarray(at, at + 4));
          // unorm8 conversion may round a half either way.
          got.forEach((v, ch) =>
            expect(Math.abs(v - colour[ch]! * 255), `pixel ${x},${y}`).toBeLessThanOrEqual(1),
          );
          seen.add(got.join());
        }
      expect(seen.size).toBeGreaterThan(3);
      // Each placed element's 4 × 4 pixels.
      expect(nonFinitePixels).toBe(5 * 16);

      // The whole tensor as one block: the counts' mix over the background, strength by the share changed.
      const mixed = await harness!.run(async () => {
        await renderer.compute({ tensor: t.input, shape, view: null, maxRows: 1, maxCols: 1, epsilon: 1e-5 });
        return renderer.drawPixels(4, 4, palette);
      });
      const counts = referenceMask(t.values, maskGeometry(shape, null, 1, 1), 1e-5);
      const changed = [0, 1, 2, 3, 4, 5].reduce((a, c) => a + counts[c]!, 0);
      const strength = 0.35 + 0.65 * Math.sqrt(changed / 48);
      const expected = [0, 1, 2].map((ch) => {
        const mix = [0, 1, 2, 3, 4, 5].reduce((a, c) => a + counts[c]! * colourOf(c)[ch]!, 0);
        return palette[0][ch]! + (mix / changed - palette[0][ch]!) * strength;
      });
      seen = new Set(
        Array.from({ length: 16 }, (_, i) => Array.from(mixed.subarray(i * 4, i * 4 + 4)).join()),
      );
      expect(seen.size).toBe(1);
      const px = Array.from(mixed.subarray(0, 3));
      px.forEach((v, ch) => expect(Math.abs(v - expected[ch]! * 255)).toBeLessThanOrEqual(1));
    } finally {
      renderer.destroy();
    }
    expect(harness!.liveBuffers()).toEqual([]);
  });
});

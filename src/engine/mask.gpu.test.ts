// The mask kernel (shaders/mask.wgsl) through MaskRenderer against the CPU reference referenceMask on
// fresh seeded tensors: every block counter equal, for whole-tensor views with multi-element blocks,
// zoomed views down to single elements, one and many windows, bf16 / f16 / f32, 2 to 4 agents; and
// the grid's sums equal the statistics reference of the same tensor.
import { afterAll, describe, expect, it } from 'vitest';
import type { FloatDtype } from '../format/dtype.ts';
import { referenceMask } from '../methods/mask.ts';
import { referenceStats } from '../methods/reference.ts';
import { randomTensor } from '../methods/test-tensors.ts';
import { MaskRenderer } from './inspect.ts';
import { maskGeometry, maskLayout, summarizeMask, type MaskView } from '../methods/mask-geometry.ts';
import { openGpuHarness } from '../test/gpu-harness.ts';

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

describe.skipIf(!harness)(`mask kernel on ${harness?.adapterDescription ?? 'no adapter'}`, () => {
  it.each(CASES.map((c, i) => [i, c] as const))('case %i equals the CPU reference', async (i, c) => {
    const numel = c.shape.reduce((a, b) => a * b, 1);
    const t = randomTensor({ name: `mask${i}`, dtype: c.dtype, numel, agents: c.agents, seed: 9100 + i });
    const renderer = new MaskRenderer(harness!.device, c.agents);
    try {
      const result = await harness!.run(() =>
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
      }
    } finally {
      renderer.destroy();
    }
    expect(harness!.liveBuffers()).toEqual([]);
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
  it('paints each single-element block in its class colour and blocks of many in their mix', async () => {
    const palette = [
      [0.96, 0.96, 0.97, 1],
      [0.36, 0.4, 0.46, 1],
      [0.7, 0.15, 0.12, 1],
      [0, 0.45, 0.7, 1],
      [0.9, 0.62, 0, 1],
      [0, 0.62, 0.45, 1],
    ] as const;
    const shape = [6, 8];
    const t = randomTensor({ name: 'draw', dtype: 'BF16', numel: 48, agents: 3, seed: 4242 });
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
      for (let y = 0; y < 24; y++)
        for (let x = 0; x < 32; x++) {
          const cell = (Math.floor(y / 4) * 8 + Math.floor(x / 4)) * maskLayout(3).stride;
          const k = [0, 1, 2, 3, 4].find((c) => grid[cell + c]! > 0);
          const colour = k === undefined ? palette[0] : k < 3 ? palette[3 + k]! : palette[k - 2]!;
          const at = (y * 32 + x) * 4;
          const got = Array.from(single.subarray(at, at + 4));
          // unorm8 conversion may round a half either way.
          got.forEach((v, ch) =>
            expect(Math.abs(v - colour[ch]! * 255), `pixel ${x},${y}`).toBeLessThanOrEqual(1),
          );
          seen.add(got.join());
        }
      expect(seen.size).toBeGreaterThan(3);

      // The whole tensor as one block: the counts' mix over the background, strength by the share changed.
      const mixed = await harness!.run(async () => {
        await renderer.compute({ tensor: t.input, shape, view: null, maxRows: 1, maxCols: 1, epsilon: 1e-5 });
        return renderer.drawPixels(4, 4, palette);
      });
      const counts = referenceMask(t.values, maskGeometry(shape, null, 1, 1), 1e-5);
      const changed = [0, 1, 2, 3, 4].reduce((a, c) => a + counts[c]!, 0);
      const strength = 0.35 + 0.65 * Math.sqrt(changed / 48);
      const expected = [0, 1, 2].map((ch) => {
        const mix = [0, 1, 2, 3, 4].reduce(
          (a, c) => a + counts[c]! * (c < 3 ? palette[3 + c]! : palette[c - 2]!)[ch]!,
          0,
        );
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

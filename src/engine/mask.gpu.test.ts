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
import { maskGeometry, summarizeMask, type MaskView } from './mask-geometry.ts';
import { openGpuHarness } from './test-harness.ts';

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

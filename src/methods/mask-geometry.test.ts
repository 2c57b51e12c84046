// The tensor view's grid geometry and its sums: whole-element blocks that tile the view exactly, views
// clamped inside the tensor, and exact integer totals per class, row and column.
import { describe, expect, it } from 'vitest';
import { seededRandom } from './rng.ts';
import {
  blockCounts,
  blockNumel,
  elementPosition,
  headAxis,
  headCounts,
  MASK_MAX_ASPECT,
  maskCanvasSize,
  maskGeometry,
  maskLayout,
  parseElement,
  summarizeMask,
  tensorMatrix,
} from './mask-geometry.ts';

describe('maskGeometry', () => {
  it('cuts the 151936 × 896 embedding into at most 512 × 512 blocks of 297 × 2 elements', () => {
    expect(maskGeometry([151936, 896], null, 512, 512)).toEqual({
      tensorRows: 151936,
      tensorCols: 896,
      row0: 0,
      col0: 0,
      rows: 151936,
      cols: 896,
      blockRows: 297,
      blockCols: 2,
      gridRows: 512,
      gridCols: 448,
    });
  });

  it('sees vectors as one row and higher ranks as rows of the last dimension', () => {
    expect(tensorMatrix([7])).toEqual({ rows: 1, cols: 7 });
    expect(tensorMatrix([2, 3, 5])).toEqual({ rows: 6, cols: 5 });
    expect(tensorMatrix([])).toEqual({ rows: 1, cols: 1 });
  });

  it('clamps a view inside the tensor', () => {
    const g = maskGeometry([10, 10], { row0: 8, col0: -3, rows: 50, cols: 4.7 }, 64, 64);
    expect([g.row0, g.col0, g.rows, g.cols]).toEqual([8, 0, 2, 4]);
  });

  it('tiles every random view exactly: the blocks hold each element once', () => {
    const random = seededRandom(31);
    for (let trial = 0; trial < 60; trial++) {
      const shape = [1 + Math.floor(random() * 3000), 1 + Math.floor(random() * 300)];
      const view = {
        row0: Math.floor(random() * shape[0]!),
        col0: Math.floor(random() * shape[1]!),
        rows: 1 + Math.floor(random() * shape[0]!),
        cols: 1 + Math.floor(random() * shape[1]!),
      };
      const max = [1 + Math.floor(random() * 200), 1 + Math.floor(random() * 200)] as const;
      const g = maskGeometry(shape, view, max[0], max[1]);
      expect(g.gridRows).toBeLessThanOrEqual(max[0]);
      expect(g.gridCols).toBeLessThanOrEqual(max[1]);
      expect(g.row0 + g.rows).toBeLessThanOrEqual(shape[0]!);
      let total = 0;
      let smallest = Infinity;
      for (let gy = 0; gy < g.gridRows; gy++)
        for (let gx = 0; gx < g.gridCols; gx++) {
          const n = blockNumel(g, gy, gx);
          smallest = Math.min(smallest, n);
          total += n;
        }
      expect(smallest).toBeGreaterThan(0);
      expect(total).toBe(g.rows * g.cols);
    }
  });
});

describe('summarizeMask', () => {
  it('sums classes, agents, grid rows and columns, and derives the unchanged from block sizes', () => {
    // A 3 × 5 view in 2 × 3 blocks of 2 × 2 (the last row and column of blocks are smaller), 2 agents.
    const g = maskGeometry([3, 5], null, 2, 3);
    expect([g.gridRows, g.gridCols, g.blockRows, g.blockCols]).toEqual([2, 3, 2, 2]);
    const layout = maskLayout(2);
    const grid = new Uint32Array(6 * layout.stride);
    const put = (gy: number, gx: number, counts: number[]): void =>
      grid.set(counts, (gy * 3 + gx) * layout.stride);
    // unique0, unique1, shared, conflict, non-finite, changed0, changed1
    put(0, 0, [1, 0, 2, 1, 0, 4, 3]);
    put(0, 2, [0, 1, 0, 0, 1, 0, 1]);
    put(1, 1, [0, 0, 1, 0, 2, 1, 1]);
    const s = summarizeMask(grid, g, 2);
    expect(s).toEqual({
      numel: 15,
      // Non-finite elements are neither changed nor unchanged.
      unchanged: 15 - 6 - 3,
      unique: [1, 1],
      shared: 3,
      conflict: 1,
      nonFinite: 3,
      changed: [5, 5],
      rows: [
        [4, 1],
        [4, 1],
      ],
      cols: [
        [4, 1, 0],
        [3, 1, 1],
      ],
    });
    expect(blockCounts(grid, g, 2, 0, 2)).toEqual({
      numel: 2,
      unchanged: 0,
      unique: [0, 1],
      shared: 0,
      conflict: 0,
      nonFinite: 1,
      changed: [0, 1],
    });
  });
});

describe('headCounts', () => {
  const summary = (g: ReturnType<typeof maskGeometry>, rows: number[], cols: number[]) => ({
    numel: g.rows * g.cols,
    unchanged: 0,
    unique: [0],
    shared: 0,
    conflict: 0,
    nonFinite: 0,
    changed: [0],
    rows: [rows],
    cols: [cols],
  });

  it('sums whole heads from the row profile of q/k/v and the column profile of o', () => {
    expect(headAxis('model.layers.3.self_attn.q_proj.weight')).toBe('rows');
    expect(headAxis('model.layers.3.self_attn.v_proj.bias')).toBe('rows');
    expect(headAxis('model.layers.3.self_attn.o_proj.weight')).toBe('cols');
    expect(headAxis('model.layers.3.mlp.up_proj.weight')).toBeNull();
    // 8 rows of heads of 4 in blocks of 2 rows: two heads, each two grid rows.
    const g = maskGeometry([8, 3], null, 4, 3);
    expect([g.blockRows, g.gridRows]).toEqual([2, 4]);
    expect(headCounts(summary(g, [1, 2, 3, 4], [0, 0, 0]), g, 4, 'rows')).toEqual([[3, 7]]);
    // A bias is one row: its heads lie along the columns.
    const bias = maskGeometry([6], null, 4, 3);
    expect(headCounts(summary(bias, [5], [1, 2, 3]), bias, 2, 'rows')).toEqual([[1, 2, 3]]);
  });

  it('gives nothing when a head is not a whole number of blocks or the view is partial', () => {
    const g = maskGeometry([9, 3], null, 3, 3);
    expect(headCounts(summary(g, [1, 1, 1], [0, 0, 0]), g, 2, 'rows')).toBeNull();
    const part = maskGeometry([8, 3], { row0: 2, col0: 0, rows: 4, cols: 3 }, 8, 8);
    expect(headCounts(summary(part, [1, 1, 1, 1], [0, 0, 0]), part, 4, 'rows')).toBeNull();
  });
});

describe('maskCanvasSize', () => {
  const view = (rows: number, cols: number) => ({ row0: 0, col0: 0, rows, cols });
  it('keeps the view’s aspect with its longer side at the size asked', () => {
    expect(maskCanvasSize(view(64, 256), 512)).toEqual({ width: 512, height: 128 });
    expect(maskCanvasSize(view(256, 64), 512)).toEqual({ width: 128, height: 512 });
    expect(maskCanvasSize(view(100, 100), 512)).toEqual({ width: 512, height: 512 });
    expect(maskCanvasSize(view(3, 7), 512)).toEqual({ width: 512, height: Math.round((512 * 3) / 7) });
  });
  it('limits a vector to a strip of the largest aspect', () => {
    expect(maskCanvasSize(view(1, 4096), 512)).toEqual({ width: 512, height: 512 / MASK_MAX_ASPECT });
    expect(maskCanvasSize(view(4096, 1), 512)).toEqual({ width: 512 / MASK_MAX_ASPECT, height: 512 });
  });
});

describe('parseElement', () => {
  const shape = [64, 256];
  it('takes a flat index, [row, col] and row, col to the same element', () => {
    expect(parseElement('1234', shape)).toEqual({ index: 1234 });
    expect(parseElement('[4, 210]', shape)).toEqual({ index: 4 * 256 + 210 });
    expect(parseElement('4, 210', shape)).toEqual({ index: 4 * 256 + 210 });
    expect(parseElement(' [4,210] ', shape)).toEqual({ index: 4 * 256 + 210 });
    expect(parseElement('4 210', shape)).toEqual({ index: 4 * 256 + 210 });
  });
  it('round-trips every position of random shapes through elementPosition', () => {
    const random = seededRandom(7);
    for (let k = 0; k < 200; k++) {
      const rows = 1 + Math.floor(random() * 50);
      const cols = 1 + Math.floor(random() * 50);
      const index = Math.floor(random() * rows * cols);
      const [r, c] = elementPosition(index, [rows, cols]);
      expect(parseElement(`[${r}, ${c}]`, [rows, cols])).toEqual({ index });
    }
  });
  it('reads a position in a tensor’s own dimensions, or as row and column of its matrix', () => {
    // [2, 3, 4]: rows are the first two dimensions (6), columns the last (4).
    expect(parseElement('[1, 2, 3]', [2, 3, 4])).toEqual({ index: 1 * 12 + 2 * 4 + 3 });
    expect(parseElement('[5, 3]', [2, 3, 4])).toEqual({ index: 5 * 4 + 3 });
  });
  it('says why a text names no element', () => {
    expect(parseElement('', shape)).toHaveProperty(
      'error',
      'Type a flat index, or a position such as [row, col].',
    );
    expect(parseElement('16384', shape)).toHaveProperty(
      'error',
      'Index 16384 is past the last element, 16383.',
    );
    expect(parseElement('[64, 0]', shape)).toHaveProperty(
      'error',
      'Position 64 on axis 0 is past its size, 64.',
    );
    expect(parseElement('[0, 256]', shape)).toHaveProperty(
      'error',
      'Position 256 on axis 1 is past its size, 256.',
    );
    expect(parseElement('[1, 2, 3]', shape)).toHaveProperty(
      'error',
      'A position of 3 numbers fits neither the shape [64, 256] nor [row, col].',
    );
    expect(parseElement('-1', shape)).toHaveProperty('error');
    expect(parseElement('[1.5, 2]', shape)).toHaveProperty('error');
    expect(parseElement('abc', shape)).toHaveProperty('error');
  });
});

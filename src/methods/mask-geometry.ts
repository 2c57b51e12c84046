// The tensor view's grid: a view of a tensor (seen as a matrix) cut into whole-element blocks, the
// counters each block holds (shaders/mask.wgsl writes them), and their exact sums. Pure: shared by
// the worker, the page and the tests.

import { numel } from '../format/safetensors.ts';

/** Offsets of one block's counters for N agents (the comment at the top of mask.wgsl). */
export interface MaskLayout {
  /** unique to agent t at unique + t */
  unique: number;
  shared: number;
  conflict: number;
  /** Non-finite (SPEC.md): the models' bits differ and one is NaN or ±Inf; in no other counter. */
  nonFinite: number;
  /** changed by agent t at changed + t */
  changed: number;
  stride: number;
}

export function maskLayout(agents: number): MaskLayout {
  return {
    unique: 0,
    shared: agents,
    conflict: agents + 1,
    nonFinite: agents + 2,
    changed: agents + 3,
    stride: 2 * agents + 3,
  };
}

/** A rectangle of the tensor seen as a rows × cols matrix, in elements. */
export interface MaskView {
  row0: number;
  col0: number;
  rows: number;
  cols: number;
}

export interface MaskGeometry extends MaskView {
  tensorRows: number;
  tensorCols: number;
  /** Elements per block, down and across; blocks at the view's far edges may be smaller. */
  blockRows: number;
  blockCols: number;
  gridRows: number;
  gridCols: number;
}

/** A tensor as a matrix: the last dimension across, all others down (a vector is one row). */
export function tensorMatrix(shape: readonly number[]): { rows: number; cols: number } {
  const cols = shape.length === 0 ? 1 : shape[shape.length - 1]!;
  const rows = numel(shape.slice(0, -1));
  return { rows, cols };
}

/**
 * The grid for a view (the whole tensor when null), clamped inside the tensor: whole-element blocks,
 * the fewest per block that keep the grid within maxRows × maxCols.
 */
export function maskGeometry(
  shape: readonly number[],
  view: MaskView | null,
  maxRows: number,
  maxCols: number,
): MaskGeometry {
  const { rows: tensorRows, cols: tensorCols } = tensorMatrix(shape);
  if (tensorRows * tensorCols === 0) throw new RangeError('an empty tensor has nothing to draw');
  const clamp = (v: number, lo: number, hi: number): number => Math.min(Math.max(Math.floor(v), lo), hi);
  const wanted = view ?? { row0: 0, col0: 0, rows: tensorRows, cols: tensorCols };
  const row0 = clamp(wanted.row0, 0, tensorRows - 1);
  const col0 = clamp(wanted.col0, 0, tensorCols - 1);
  const rows = clamp(wanted.rows, 1, tensorRows - row0);
  const cols = clamp(wanted.cols, 1, tensorCols - col0);
  const blockRows = Math.ceil(rows / Math.max(1, Math.floor(maxRows)));
  const blockCols = Math.ceil(cols / Math.max(1, Math.floor(maxCols)));
  return {
    tensorRows,
    tensorCols,
    row0,
    col0,
    rows,
    cols,
    blockRows,
    blockCols,
    gridRows: Math.ceil(rows / blockRows),
    gridCols: Math.ceil(cols / blockCols),
  };
}

/**
 * The most a tensor view's sides differ (an embedding of 512 × 64 is drawn true): past it the short
 * side is stretched, so a vector is a strip whose elements a pointer can still pick, not a hairline.
 */
export const MASK_MAX_ASPECT = 8;

/**
 * The tensor view's canvas in pixels for a view: the view's aspect (columns : rows, in elements),
 * limited to MASK_MAX_ASPECT, with its longer side `longest` pixels.
 */
export function maskCanvasSize(view: MaskView, longest: number): { width: number; height: number } {
  const aspect = Math.min(MASK_MAX_ASPECT, Math.max(1 / MASK_MAX_ASPECT, view.cols / view.rows));
  return aspect >= 1
    ? { width: longest, height: Math.max(1, Math.round(longest / aspect)) }
    : { width: Math.max(1, Math.round(longest * aspect)), height: longest };
}

/** Elements in block (gy, gx) of the grid. */
export function blockNumel(g: MaskGeometry, gy: number, gx: number): number {
  return Math.min(g.blockRows, g.rows - gy * g.blockRows) * Math.min(g.blockCols, g.cols - gx * g.blockCols);
}

/** What a grid says in total and per grid row and column: exact integer sums of its blocks. */
export interface MaskSummary {
  numel: number;
  unchanged: number;
  unique: number[];
  shared: number;
  conflict: number;
  /** Elements not classified: their bits differ and hold NaN or ±Inf. */
  nonFinite: number;
  changed: number[];
  /** rows[t][gy]: elements of grid row gy that agent t changed; cols[t][gx] likewise per grid column. */
  rows: number[][];
  cols: number[][];
}

export function summarizeMask(grid: Uint32Array, g: MaskGeometry, agents: number): MaskSummary {
  const layout = maskLayout(agents);
  const zeros = (k: number): number[] => new Array<number>(k).fill(0);
  const s: MaskSummary = {
    numel: g.rows * g.cols,
    unchanged: 0,
    unique: zeros(agents),
    shared: 0,
    conflict: 0,
    nonFinite: 0,
    changed: zeros(agents),
    rows: Array.from({ length: agents }, () => zeros(g.gridRows)),
    cols: Array.from({ length: agents }, () => zeros(g.gridCols)),
  };
  let changedSomewhere = 0;
  for (let gy = 0; gy < g.gridRows; gy++) {
    for (let gx = 0; gx < g.gridCols; gx++) {
      const cell = (gy * g.gridCols + gx) * layout.stride;
      s.shared += grid[cell + layout.shared]!;
      s.conflict += grid[cell + layout.conflict]!;
      s.nonFinite += grid[cell + layout.nonFinite]!;
      changedSomewhere += grid[cell + layout.shared]! + grid[cell + layout.conflict]!;
      for (let t = 0; t < agents; t++) {
        s.unique[t]! += grid[cell + layout.unique + t]!;
        changedSomewhere += grid[cell + layout.unique + t]!;
        const changed = grid[cell + layout.changed + t]!;
        s.changed[t]! += changed;
        s.rows[t]![gy]! += changed;
        s.cols[t]![gx]! += changed;
      }
    }
  }
  s.unchanged = s.numel - changedSomewhere - s.nonFinite;
  return s;
}

/** One block's counts, its unchanged elements derived from its size. */
export function blockCounts(
  grid: Uint32Array,
  g: MaskGeometry,
  agents: number,
  gy: number,
  gx: number,
): {
  numel: number;
  unchanged: number;
  unique: number[];
  shared: number;
  conflict: number;
  nonFinite: number;
  changed: number[];
} {
  const layout = maskLayout(agents);
  const cell = (gy * g.gridCols + gx) * layout.stride;
  const unique = Array.from({ length: agents }, (_, t) => grid[cell + layout.unique + t]!);
  const shared = grid[cell + layout.shared]!;
  const conflict = grid[cell + layout.conflict]!;
  const nonFinite = grid[cell + layout.nonFinite]!;
  const numel = blockNumel(g, gy, gx);
  return {
    numel,
    unchanged: numel - unique.reduce((a, b) => a + b, 0) - shared - conflict - nonFinite,
    unique,
    shared,
    conflict,
    nonFinite,
    changed: Array.from({ length: agents }, (_, t) => grid[cell + layout.changed + t]!),
  };
}

/** Attention heads laid along a projection's rows (q, k, v and their biases) or columns (o). */
export function headAxis(tensor: string): 'rows' | 'cols' | null {
  if (/(^|\.)(q_proj|k_proj|v_proj)\.(weight|bias)$/.test(tensor)) return 'rows';
  if (/(^|\.)o_proj\.weight$/.test(tensor)) return 'cols';
  return null;
}

/**
 * Elements each agent changed per attention head, summed exactly from the grid's row or column
 * profile; null unless the view spans the whole axis and each head is a whole number of blocks.
 */
export function headCounts(
  s: MaskSummary,
  g: MaskGeometry,
  headDim: number,
  axis: 'rows' | 'cols',
): number[][] | null {
  const rows = axis === 'rows';
  // A bias is one row: its heads lie along its columns.
  const along = rows && g.tensorRows === 1 ? 'cols' : axis;
  const size = along === 'rows' ? g.tensorRows : g.tensorCols;
  const whole = along === 'rows' ? g.row0 === 0 && g.rows === size : g.col0 === 0 && g.cols === size;
  const block = along === 'rows' ? g.blockRows : g.blockCols;
  if (!Number.isInteger(headDim) || headDim < 1 || size % headDim !== 0 || !whole || headDim % block !== 0)
    return null;
  const per = headDim / block;
  const profile = along === 'rows' ? s.rows : s.cols;
  return profile.map((values) =>
    Array.from({ length: size / headDim }, (_, h) =>
      values.slice(h * per, (h + 1) * per).reduce((a, b) => a + b, 0),
    ),
  );
}

/**
 * Reads an element as a person types it: a flat index (`1234`), or a position, bracketed or not
 * (`[3, 17]`, `3, 17`), either in the tensor's own dimensions or as row and column of the tensor
 * seen as a matrix (tensorMatrix). Returns the flat index, or why the text names no element.
 */
export function parseElement(text: string, shape: readonly number[]): { index: number } | { error: string } {
  const trimmed = text.trim();
  const inner = /^\[(.*)\]$/.exec(trimmed)?.[1] ?? trimmed;
  const parts = inner.split(/\s*,\s*|\s+/).filter((p) => p !== '');
  if (parts.length === 0) return { error: 'Type a flat index, or a position such as [row, col].' };
  if (!parts.every((p) => /^\d+$/.test(p)))
    return { error: `“${trimmed}” is not a flat index nor a position such as [row, col] of whole numbers.` };
  const at = parts.map(Number);
  const total = numel(shape);
  if (at.length === 1) {
    const index = at[0]!;
    return index < total ? { index } : { error: `Index ${index} is past the last element, ${total - 1}.` };
  }
  const { rows, cols } = tensorMatrix(shape);
  const dims = at.length === shape.length ? shape : at.length === 2 ? [rows, cols] : null;
  if (!dims)
    return {
      error: `A position of ${at.length} numbers fits neither the shape [${shape.join(', ')}] nor [row, col].`,
    };
  let index = 0;
  for (const [d, size] of dims.entries()) {
    const i = at[d]!;
    if (i >= size) return { error: `Position ${i} on axis ${d} is past its size, ${size}.` };
    index = index * size + i;
  }
  return { index };
}

/** A flat index as [row, col] of the tensor seen as a matrix (tensorMatrix). */
export function elementPosition(index: number, shape: readonly number[]): [number, number] {
  const { cols } = tensorMatrix(shape);
  return [Math.floor(index / cols), index % cols];
}

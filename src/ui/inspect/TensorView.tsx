// The tensor view: one tensor's per-element mask, drawn by the engine worker on its GPU into a canvas
// it was handed, each pixel a block of elements coloured by the shares of its classes. Hover shows a
// block's exact counts, click selects its first element for the inspector, and the controls zoom and
// pan down to single elements (each view change is one pass over the viewed rows in the engine).
import { useEffect, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';
import type { MaskPalette, MaskViewResult } from '../../driver/tensor-view.ts';
import {
  blockCounts,
  headAxis,
  headCounts,
  maskCanvasSize,
  summarizeMask,
  type MaskGeometry,
  type MaskSummary,
  type MaskView,
} from '../../methods/mask-geometry.ts';
import { MASK_CANVAS_SIZE } from '../../state/inspect-slice.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { formatCount, formatDuration } from '../format.ts';
import { AGENT_COLORS, agentColor, ErrorBox } from '../studio/common.tsx';

export const SHARED_COLOR = '#5b6675';
export const CONFLICT_COLOR = '#b3261e';
export const UNCHANGED_COLOR = '#f4f6f9';
/** Elements whose models' bits differ and hold NaN or ±Inf: not classified (SPEC.md), shown apart. */
export const NON_FINITE_COLOR = '#4a148c';

function rgba(hex: string): [number, number, number, number] {
  const n = Number.parseInt(hex.slice(1), 16);
  return [((n >> 16) & 255) / 255, ((n >> 8) & 255) / 255, (n & 255) / 255, 1];
}

/**
 * The colours the engine draws with: unchanged, shared, conflict, non-finite, then each agent's own
 * for its unique changes.
 */
export function maskPalette(): MaskPalette {
  return [
    rgba(UNCHANGED_COLOR),
    rgba(SHARED_COLOR),
    rgba(CONFLICT_COLOR),
    rgba(NON_FINITE_COLOR),
    ...AGENT_COLORS.map(rgba),
  ];
}

// A canvas can hand its control over once; StrictMode runs the effect twice on the same element.
const handedOver = new WeakSet<HTMLCanvasElement>();

/** The view `factor` times smaller (or larger, factor < 1) around block (gy, gx), inside the tensor. */
function zoomed(g: MaskGeometry, gy: number, gx: number, factor: number): MaskView {
  const rows = Math.max(1, Math.min(g.tensorRows, Math.ceil(g.rows / factor)));
  const cols = Math.max(1, Math.min(g.tensorCols, Math.ceil(g.cols / factor)));
  const centreRow = g.row0 + Math.min(g.rows - 1, gy * g.blockRows + Math.floor(g.blockRows / 2));
  const centreCol = g.col0 + Math.min(g.cols - 1, gx * g.blockCols + Math.floor(g.blockCols / 2));
  return {
    row0: Math.max(0, Math.min(g.tensorRows - rows, centreRow - Math.floor(rows / 2))),
    col0: Math.max(0, Math.min(g.tensorCols - cols, centreCol - Math.floor(cols / 2))),
    rows,
    cols,
  };
}

function panned(g: MaskGeometry, down: number, across: number): MaskView {
  const row0 = g.row0 + Math.round(down * g.rows);
  const col0 = g.col0 + Math.round(across * g.cols);
  return {
    row0: Math.max(0, Math.min(g.tensorRows - g.rows, row0)),
    col0: Math.max(0, Math.min(g.tensorCols - g.cols, col0)),
    rows: g.rows,
    cols: g.cols,
  };
}

function Profile({
  title,
  axis,
  series,
  span,
  testId,
}: {
  title: string;
  axis: string;
  series: number[][];
  /** Elements behind each point, per point (for a share). */
  span: (i: number) => number;
  testId: string;
}) {
  const width = 480;
  const height = 96;
  const top = 6;
  const bottom = 22;
  const points = series[0]?.length ?? 0;
  const x = (i: number): number => (points <= 1 ? width / 2 : (i / (points - 1)) * (width - 8) + 4);
  const y = (share: number): number => top + (1 - share) * (height - top - bottom);
  return (
    <figure className="inspect-profile" data-testid={testId}>
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${title}: share changed per agent`}>
        <line x1={4} x2={width - 4} y1={y(0)} y2={y(0)} stroke="#5b6675" strokeWidth={1} />
        {series.map((values, t) => (
          <polyline
            key={t}
            fill="none"
            stroke={agentColor(t)}
            strokeWidth={1.5}
            points={values.map((v, i) => `${x(i)},${y(span(i) > 0 ? v / span(i) : 0)}`).join(' ')}
          />
        ))}
        <text x={4} y={height - 6} fontSize={11} fill="currentColor">
          {axis}
        </text>
        <text x={width - 4} y={height - 6} fontSize={11} fill="currentColor" textAnchor="end">
          share changed: 0 to 100%
        </text>
      </svg>
    </figure>
  );
}

/** Which attention heads each agent touched, for q/k/v/o projections whose heads the grid resolves. */
function Heads({
  result,
  summary,
  labels,
}: {
  result: MaskViewResult;
  summary: MaskSummary;
  labels: string[];
}) {
  const axis = headAxis(result.tensor);
  if (!axis || result.headDim === null) return null;
  const g = result.geometry;
  const counts = headCounts(summary, g, result.headDim, axis);
  const firstAgent = counts?.[0];
  if (!counts || !firstAgent)
    return (
      <p className="muted" data-testid="tensor-heads-unavailable">
        Heads of {result.headDim} elements: show the whole tensor at a block size that divides the head size
        to count them.
      </p>
    );
  const byRows = axis === 'rows' && g.tensorRows > 1;
  const perHead = result.headDim * (byRows ? g.cols : g.rows);
  return (
    <div className="studio-scroll inspect-heads">
      <table className="studio-table studio-table--compact" data-testid="tensor-heads">
        <caption>
          Share of each attention head ({formatCount(perHead)} elements) each agent changed; hover for counts
        </caption>
        <thead>
          <tr>
            <th scope="col">Agent</th>
            {firstAgent.map((_, h) => (
              <th key={h} scope="col">
                h{h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {counts.map((row, t) => (
            <tr key={t}>
              <th scope="row">{labels[t] ?? `agent ${t + 1}`}</th>
              {row.map((n, h) => (
                <td key={h} title={`${formatCount(n)} of ${formatCount(perHead)}`} data-count={n}>
                  {((100 * n) / perHead).toFixed(1)}%
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The block of the view holding the element at a flat index, or null outside the view. */
function blockOf<T>(g: MaskGeometry, index: number, of: T): { gy: number; gx: number; of: T } | null {
  if (!Number.isInteger(index) || index < 0 || index >= g.tensorRows * g.tensorCols) return null;
  const row = Math.floor(index / g.tensorCols) - g.row0;
  const col = (index % g.tensorCols) - g.col0;
  if (row < 0 || col < 0 || row >= g.rows || col >= g.cols) return null;
  return { gy: Math.floor(row / g.blockRows), gx: Math.floor(col / g.blockCols), of };
}

function describeBlock(g: MaskGeometry, gy: number, gx: number): string {
  const r0 = g.row0 + gy * g.blockRows;
  const c0 = g.col0 + gx * g.blockCols;
  const r1 = Math.min(g.row0 + g.rows, r0 + g.blockRows) - 1;
  const c1 = Math.min(g.col0 + g.cols, c0 + g.blockCols) - 1;
  const rows = r0 === r1 ? `row ${formatCount(r0)}` : `rows ${formatCount(r0)}–${formatCount(r1)}`;
  const cols = c0 === c1 ? `column ${formatCount(c0)}` : `columns ${formatCount(c0)}–${formatCount(c1)}`;
  return `${rows}, ${cols}`;
}

function BlockFacts({
  result,
  gy,
  gx,
  labels,
}: {
  result: MaskViewResult;
  gy: number;
  gx: number;
  labels: string[];
}) {
  const g = result.geometry;
  const b = blockCounts(result.grid, g, result.agents, gy, gx);
  return (
    <p className="inspect-block" data-testid="tensor-mask-block" data-json={JSON.stringify({ gy, gx, ...b })}>
      <strong>{describeBlock(g, gy, gx)}</strong> ({formatCount(b.numel)} element{b.numel === 1 ? '' : 's'}):
      unchanged {formatCount(b.unchanged)}
      {b.unique.map((u, t) => (
        <span key={t}>
          , unique to {labels[t] ?? `agent ${t + 1}`} {formatCount(u)}
        </span>
      ))}
      , shared {formatCount(b.shared)}, sign conflict {formatCount(b.conflict)}
      {b.nonFinite > 0 && <>, non-finite (NaN or ±Inf, not classified) {formatCount(b.nonFinite)}</>}
    </p>
  );
}

export function TensorView() {
  const mask = useStudio((s) => s.inspect.mask);
  const tensor = useStudio((s) => s.inspect.tensor);
  const attached = useStudio((s) => s.inspect.canvas);
  const labels = useStudio((s) => s.studio.analysisLabels);
  const agents = useStudio((s) => s.studio.models.filter((m) => m.role === 'agent').length);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const result = mask.result;
  // Blocks are remembered with the grid they belong to, so a new view forgets them.
  type Block = { gy: number; gx: number; of: MaskViewResult | null };
  const [hovered, setHover] = useState<Block | null>(null);
  const [chosen, setChosen] = useState<Block | null>(null);
  const index = useStudio((s) => s.inspect.index);
  const hover = hovered?.of === result ? hovered : null;
  const g = result?.geometry ?? null;
  // The inspector's element (a click here, or typed as an index or [row, col]) is outlined in the view.
  const picked = result && g && result.tensor === tensor ? blockOf(g, index, result) : null;
  // Zoom centres on the block last clicked in this view, else on the view's centre.
  const clicked = chosen?.of === result ? chosen : null;

  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas || handedOver.has(canvas)) return;
    if (typeof canvas.transferControlToOffscreen !== 'function') return;
    handedOver.add(canvas);
    void studioStore.getState().attachMaskCanvas(canvas.transferControlToOffscreen(), maskPalette());
  }, []);

  const blockAt = (event: MouseEvent<HTMLCanvasElement>): Block | null => {
    if (!g) return null;
    // The image fills the content box: measure from inside the canvas's border.
    const canvas = event.currentTarget;
    const box = canvas.getBoundingClientRect();
    const x = event.clientX - box.left - canvas.clientLeft;
    const y = event.clientY - box.top - canvas.clientTop;
    // Fractional sizes: clientWidth rounds, and a sub-pixel error picks the neighbouring row.
    const gx = Math.floor((x / (box.width - 2 * canvas.clientLeft)) * g.gridCols);
    const gy = Math.floor((y / (box.height - 2 * canvas.clientTop)) * g.gridRows);
    if (gx < 0 || gy < 0 || gx >= g.gridCols || gy >= g.gridRows) return null;
    return { gy, gx, of: result };
  };
  const pick = (block: Block): void => {
    if (!g) return;
    setChosen(block);
    const row = g.row0 + block.gy * g.blockRows;
    const col = g.col0 + block.gx * g.blockCols;
    studioStore.getState().setInspectTarget({ index: row * g.tensorCols + col });
  };
  const go = (view: MaskView | null): void => void studioStore.getState().setMaskView(view);
  const shown = hover ?? picked;
  const focus = clicked ?? (g ? { gy: Math.floor(g.gridRows / 2), gx: Math.floor(g.gridCols / 2) } : null);
  const single = g !== null && g.blockRows === 1 && g.blockCols === 1;
  const whole = g !== null && g.rows === g.tensorRows && g.cols === g.tensorCols;
  const summary = result && g ? summarizeMask(result.grid, g, result.agents) : null;
  // The box has the aspect the engine drew at (maskCanvasSize), its longer side the column's width.
  const drawn = g ? maskCanvasSize(g, MASK_CANVAS_SIZE.width) : MASK_CANVAS_SIZE;
  const boxWidth = drawn.width >= drawn.height ? '100%' : `${(100 * drawn.width) / drawn.height}%`;
  const onKey = (event: KeyboardEvent<HTMLDivElement>): void => {
    if (!g) return;
    const moves: Record<string, [number, number]> = {
      ArrowUp: [-0.5, 0],
      ArrowDown: [0.5, 0],
      ArrowLeft: [0, -0.5],
      ArrowRight: [0, 0.5],
    };
    const move = moves[event.key];
    if (move) {
      event.preventDefault();
      go(panned(g, move[0], move[1]));
    }
  };

  return (
    <div className="inspect-view" data-testid="tensor-view" data-status={mask.status}>
      <div
        className="inspect-view__controls"
        role="toolbar"
        aria-label="Tensor view zoom and pan"
        onKeyDown={onKey}
      >
        <button
          type="button"
          className="button button--small"
          data-testid="tensor-zoom-in"
          disabled={!g || single}
          onClick={() => g && focus && go(zoomed(g, focus.gy, focus.gx, 4))}
        >
          Zoom in ×4
        </button>
        <button
          type="button"
          className="button button--small"
          data-testid="tensor-zoom-out"
          disabled={!g || whole}
          onClick={() => g && focus && go(zoomed(g, focus.gy, focus.gx, 0.25))}
        >
          Zoom out
        </button>
        <button
          type="button"
          className="button button--small button--secondary"
          data-testid="tensor-zoom-all"
          disabled={!g || whole}
          onClick={() => go(null)}
        >
          Whole tensor
        </button>
        {(['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight'] as const).map((key) => (
          <button
            key={key}
            type="button"
            className="button button--small button--secondary"
            data-testid={`tensor-pan-${key.slice(5).toLowerCase()}`}
            disabled={!g || whole}
            onClick={() => onKey({ key, preventDefault: () => undefined } as KeyboardEvent<HTMLDivElement>)}
          >
            {{ ArrowUp: 'Up', ArrowDown: 'Down', ArrowLeft: 'Left', ArrowRight: 'Right' }[key]}
          </button>
        ))}
      </div>
      <div className="inspect-view__body">
        <div className="inspect-canvas-box" style={{ width: boxWidth }}>
          <canvas
            ref={canvasRef}
            className="inspect-canvas"
            style={{ aspectRatio: `${drawn.width} / ${drawn.height}` }}
            data-testid="tensor-mask"
            width={MASK_CANVAS_SIZE.width}
            height={MASK_CANVAS_SIZE.height}
            role="img"
            aria-label={
              tensor
                ? `Mask of ${tensor}: which agents changed each element`
                : 'Tensor view: no tensor chosen yet'
            }
            onMouseMove={(e) => setHover(blockAt(e))}
            onMouseLeave={() => setHover(null)}
            onClick={(e) => {
              const block = blockAt(e);
              if (block) pick(block);
            }}
            onDoubleClick={(e) => {
              const block = blockAt(e);
              if (block && g && !single) go(zoomed(g, block.gy, block.gx, 4));
            }}
          />
          {picked && g && (
            // The picked element's block, outlined over the image (at least a few pixels, to be seen).
            <span
              className="inspect-pick"
              data-testid="tensor-mask-pick"
              data-gy={picked.gy}
              data-gx={picked.gx}
              aria-hidden="true"
              style={{
                left: `${(100 * (picked.gx + 0.5)) / g.gridCols}%`,
                top: `${(100 * (picked.gy + 0.5)) / g.gridRows}%`,
                width: `max(6px, ${100 / g.gridCols}%)`,
                height: `max(6px, ${100 / g.gridRows}%)`,
              }}
            />
          )}
        </div>
        <div className="inspect-view__facts">
          <ul
            className="inspect-legend"
            aria-label="Colours of the tensor view"
            data-testid="tensor-mask-legend"
          >
            {Array.from({ length: agents }, (_, t) => (
              <li key={t}>
                <span className="inspect-swatch" style={{ background: agentColor(t) }} />
                unique to {labels[t] ?? `agent ${t + 1}`}
              </li>
            ))}
            <li>
              <span className="inspect-swatch inspect-swatch--shared" style={{ background: SHARED_COLOR }} />
              shared, one sign
            </li>
            <li>
              <span
                className="inspect-swatch inspect-swatch--conflict"
                style={{ background: CONFLICT_COLOR }}
              />
              shared, sign conflict
            </li>
            <li>
              <span className="inspect-swatch" style={{ background: UNCHANGED_COLOR }} />
              unchanged
            </li>
            <li data-testid="tensor-mask-legend-nonfinite">
              <span
                className="inspect-swatch inspect-swatch--nonfinite"
                style={{ background: NON_FINITE_COLOR }}
              />
              non-finite: NaN or ±Inf where the models differ, not classified
              {summary && summary.nonFinite > 0 && <> ({formatCount(summary.nonFinite)} in view)</>}
            </li>
          </ul>
          <p className="muted inspect-note">
            A pixel is a block of elements: its hue mixes the block&apos;s classes by their counts, its
            strength grows with the share changed (square root, so one change in thousands still shows).
          </p>
          {!attached && <p className="muted">The canvas is not connected to the engine yet.</p>}
          {mask.error && <ErrorBox error={mask.error} testId="tensor-mask-error" />}
          {result && g && summary && (
            <dl className="studio-facts" data-testid="tensor-mask-facts">
              <dt>Tensor</dt>
              <dd>
                <code>{result.tensor}</code> {result.dtype} [{result.shape.join(' × ')}]
              </dd>
              <dt>View</dt>
              <dd data-testid="tensor-mask-view">
                rows {formatCount(g.row0)}–{formatCount(g.row0 + g.rows - 1)} of {formatCount(g.tensorRows)},
                columns {formatCount(g.col0)}–{formatCount(g.col0 + g.cols - 1)} of{' '}
                {formatCount(g.tensorCols)}
              </dd>
              <dt>Pixel</dt>
              <dd data-testid="tensor-mask-block-size">
                {single
                  ? 'one element'
                  : `${formatCount(g.blockRows)} × ${formatCount(g.blockCols)} elements`}
              </dd>
              <dt>In view</dt>
              <dd>
                {formatCount(summary.numel)} elements: unchanged {formatCount(summary.unchanged)}, unique{' '}
                {summary.unique.map((u) => formatCount(u)).join(' / ')}, shared {formatCount(summary.shared)},
                sign conflict {formatCount(summary.conflict)}
                {summary.nonFinite > 0 && <>, non-finite {formatCount(summary.nonFinite)}</>}
              </dd>
              <dt>Pass</dt>
              <dd data-testid="tensor-mask-timing">
                {formatCount(result.elementsRead)} elements read per model in {result.windows} window
                {result.windows === 1 ? '' : 's'}, counted in {formatDuration(result.computeMs)}, drawn in{' '}
                {formatDuration(result.drawMs)}
              </dd>
            </dl>
          )}
          {result && shown && <BlockFacts result={result} gy={shown.gy} gx={shown.gx} labels={labels} />}
        </div>
      </div>
      {result && g && summary && (
        <div className="inspect-profiles">
          <Profile
            title="Rows (output neurons) each agent touched"
            axis={`rows ${formatCount(g.row0)}–${formatCount(g.row0 + g.rows - 1)}`}
            series={summary.rows}
            span={(i) => Math.min(g.blockRows, g.rows - i * g.blockRows) * g.cols}
            testId="tensor-row-profile"
          />
          <Profile
            title="Columns (input features) each agent touched"
            axis={`columns ${formatCount(g.col0)}–${formatCount(g.col0 + g.cols - 1)}`}
            series={summary.cols}
            span={(i) => Math.min(g.blockCols, g.cols - i * g.blockCols) * g.rows}
            testId="tensor-col-profile"
          />
        </div>
      )}
      {result && summary && <Heads result={result} summary={summary} labels={labels} />}
    </div>
  );
}

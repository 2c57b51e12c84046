// The overlap atlas: a layer × module heatmap per agent (small multiples, or one agent at a time for
// many agents) of % changed, % unique, % shared with a chosen agent, or the sign-conflict rate. Hover
// marks the cell (and the same cell in the other agents' grids) and shows its exact integers beside the
// pointer; a click lists the cell's tensors in the tensor table.
import { useEffect, useId, useLayoutEffect, useMemo, useRef, useState, type MouseEvent } from 'react';
import { formatCount } from '../format.ts';
import { agentColor, OFF_SCALE_COLOR, rampColor } from '../studio/colors.ts';
import {
  ATLAS_METRICS,
  NO_FILTER,
  atlasKey,
  atlasRatio,
  share,
  shortLayerLabel,
  type Atlas,
  type AtlasCell,
  type AtlasMetric,
  type Ratio,
} from './summary.ts';
import { ExportButtons } from './ExportButtons.tsx';
import { RampLegend, rampPosition, type RampScale } from './RampLegend.tsx';
import type { DrillProps } from './types.ts';

const METRIC_TEXT: Record<AtlasMetric, string> = {
  changed: '% of the cell’s elements the agent changed',
  unique: '% of the agent’s changes no other agent made',
  sharedWith: '% of the agent’s changes the chosen agent also made',
  conflicts: '% of shared elements whose agents disagree in sign',
};

/** Square root spreads the low shares that most cells hold; the legend shows the mapping either way. */
const SCALES: Record<RampScale, string> = { sqrt: 'square root', linear: 'linear' };
type Scale = RampScale;

const percentTick = (x: number): string => `${(100 * x).toFixed(x < 0.1 ? 2 : 1)}%`;

const LABEL_FONT = 11;
/** Average glyph width of the label font, to size the margins so no label is cut off. */
const GLYPH = 6.8;

interface Geometry {
  cellW: number;
  cellH: number;
  left: number;
  top: number;
  width: number;
  height: number;
  everyRow: number;
}

function geometry(atlas: Atlas): Geometry {
  const rows = atlas.rows.length;
  const cellW = atlas.modules.length > 16 ? 14 : 18;
  // Rows never shorter than the label font, so adjacent labels (final norm, head) never overlap.
  const cellH = rows <= 40 ? 14 : 11;
  const rowText = Math.max(...atlas.rows.map((r) => shortLayerLabel(r).length), 1);
  const moduleText = Math.max(...atlas.modules.map((m) => m.length), 1);
  const left = Math.ceil(rowText * GLYPH) + 10;
  const top = Math.ceil(moduleText * GLYPH) + 10;
  return {
    cellW,
    cellH,
    left,
    top,
    width: left + atlas.modules.length * cellW + 4,
    height: top + rows * cellH + 4,
    everyRow: cellH >= 14 ? 1 : rows > 60 ? 8 : 4,
  };
}

/** Rows that get a label: outside the layers always; layers every `every`-th index and the last. */
function labelled(row: string, last: string | undefined, every: number): boolean {
  const numbered = /\.(\d+)$/.exec(row);
  return !numbered || Number(numbered[1]) % every === 0 || row === last;
}

function ratioText(ratio: Ratio | null): string {
  if (ratio === null) return 'not counted';
  return `${formatCount(ratio.part)} of ${formatCount(ratio.whole)}${ratio.whole > 0 ? ` (${(100 * share(ratio)).toFixed(2)}%)` : ''}`;
}

function cellTitle(cell: AtlasCell, agent: number, label: string): string {
  const s = cell.stats;
  return `${cell.row} · ${cell.module} · ${label}: changed ${formatCount(s.changed[agent] ?? 0)} of ${formatCount(s.numel)}, unique ${formatCount(s.unique[agent] ?? 0)}, sign conflicts ${formatCount(s.signConflicts)} (${cell.tensors.length} tensor${cell.tensors.length === 1 ? '' : 's'})`;
}

/** The cell under the pointer: its key (row and module), the agent whose grid it is in, its counts. */
interface Hovered {
  key: string;
  agent: number;
  text: string;
}

/** Pixels between the pointer and the readout's nearest corner, each way. */
const READOUT_GAP = 14;

/**
 * Puts the readout beside the pointer: below right of it, or on the other side where the window's
 * edge is near, so it never covers the cell it describes nor leaves the window.
 */
function placeReadout(readout: HTMLElement, x: number, y: number): void {
  const { width, height } = readout.getBoundingClientRect();
  const left = x + READOUT_GAP + width > window.innerWidth ? x - READOUT_GAP - width : x + READOUT_GAP;
  const top = y + READOUT_GAP + height > window.innerHeight ? y - READOUT_GAP - height : y + READOUT_GAP;
  readout.style.left = `${Math.max(0, left)}px`;
  readout.style.top = `${Math.max(0, top)}px`;
}

function AgentGrid({
  atlas,
  agent,
  label,
  metric,
  other,
  max,
  scale,
  selected,
  hovered,
  onHover,
  onSelect,
}: {
  scale: Scale;
  atlas: Atlas;
  agent: number;
  label: string;
  metric: AtlasMetric;
  other: number;
  max: number;
  selected: string | null;
  hovered: Hovered | null;
  onHover(hovered: Hovered, event: MouseEvent<SVGRectElement>): void;
  onSelect(cell: AtlasCell): void;
}) {
  const g = geometry(atlas);
  const lastLayer = atlas.rows.filter((r) => /\.\d+$/.test(r)).at(-1);
  return (
    <div className="atlas-grid">
      <h4 className="atlas-grid__title">
        <span className="studio-swatch" style={{ background: agentColor(agent) }} aria-hidden="true" />
        {label}
      </h4>
      <svg
        width={g.width}
        height={g.height}
        viewBox={`0 0 ${g.width} ${g.height}`}
        role="img"
        aria-label={`${label}: ${METRIC_TEXT[metric]}, per layer (rows) and module (columns)`}
        fontSize={LABEL_FONT}
        data-testid="atlas-grid"
        data-agent={agent}
      >
        {atlas.modules.map((module, c) => (
          <text
            key={module}
            transform={`translate(${g.left + c * g.cellW + g.cellW / 2 + 4}, ${g.top - 4}) rotate(-90)`}
            fill="currentColor"
          >
            {module}
          </text>
        ))}
        {atlas.rows.map((row, r) =>
          labelled(row, lastLayer, g.everyRow) ? (
            <text
              key={row}
              x={g.left - 4}
              y={g.top + r * g.cellH + g.cellH / 2}
              textAnchor="end"
              dominantBaseline="central"
              fill="currentColor"
            >
              {shortLayerLabel(row)}
            </text>
          ) : null,
        )}
        {atlas.rows.map((row, r) =>
          atlas.modules.map((module, c) => {
            const key = atlasKey(row, module);
            const cell = atlas.cells.get(key);
            if (!cell) return null;
            const s = cell.stats;
            const ratio =
              metric === 'sharedWith' && other === agent ? null : atlasRatio(s, metric, agent, other);
            const fill =
              ratio === null || ratio.whole === 0
                ? OFF_SCALE_COLOR
                : rampColor(rampPosition(share(ratio), max, scale));
            const title = `${cellTitle(cell, agent, label)}; shown: ${ratioText(ratio)}`;
            return (
              <rect
                key={key}
                x={g.left + c * g.cellW}
                y={g.top + r * g.cellH}
                width={g.cellW - 1}
                height={g.cellH - 1}
                fill={fill}
                stroke={selected === key ? '#ff3d00' : 'none'}
                strokeWidth={selected === key ? 2 : 0}
                cursor="pointer"
                data-testid="atlas-cell"
                data-agent={agent}
                data-row={row}
                data-module={module}
                data-tensors={JSON.stringify(cell.tensors)}
                data-numel={s.numel}
                data-changed={s.changed[agent] ?? 0}
                data-unique={s.unique[agent] ?? 0}
                onMouseMove={(event) => onHover({ key, agent, text: title }, event)}
                onClick={() => onSelect(cell)}
              >
                <title>{title}</title>
              </rect>
            );
          }),
        )}
        {hovered && <HoverMark atlas={atlas} g={g} hovered={hovered} own={hovered.agent === agent} />}
      </svg>
    </div>
  );
}

/**
 * The hovered cell's outline, in the text colour so it shows on every ramp colour in both schemes:
 * solid in the grid under the pointer, dashed at the same layer and module in the other agents' grids.
 */
function HoverMark({
  atlas,
  g,
  hovered,
  own,
}: {
  atlas: Atlas;
  g: Geometry;
  hovered: Hovered;
  own: boolean;
}) {
  const cell = atlas.cells.get(hovered.key);
  if (!cell) return null;
  const r = atlas.rows.indexOf(cell.row);
  const c = atlas.modules.indexOf(cell.module);
  return (
    <rect
      x={g.left + c * g.cellW - 1}
      y={g.top + r * g.cellH - 1}
      width={g.cellW + 1}
      height={g.cellH + 1}
      fill="none"
      stroke="currentColor"
      strokeWidth={own ? 2 : 1}
      strokeDasharray={own ? undefined : '2 2'}
      pointerEvents="none"
      data-testid={own ? 'atlas-hover-mark' : 'atlas-hover-echo'}
    />
  );
}

export function AtlasView({
  atlas,
  labels,
  filter,
  onFilter,
}: { atlas: Atlas; labels: string[] } & DrillProps) {
  const id = useId();
  const [metric, setMetric] = useState<AtlasMetric>('changed');
  const [other, setOther] = useState(labels.length > 1 ? 1 : 0);
  const [shown, setShown] = useState<number | 'all'>('all');
  const [scale, setScale] = useState<Scale>('sqrt');
  const [hover, setHover] = useState<Hovered | null>(null);
  const figure = useRef<HTMLElement>(null);
  const readout = useRef<HTMLDivElement>(null);
  // The pointer moves far more often than it changes cell: the readout follows it without a render.
  const pointer = useRef({ x: 0, y: 0 });
  useLayoutEffect(() => {
    if (hover && readout.current) placeReadout(readout.current, pointer.current.x, pointer.current.y);
  }, [hover]);
  // A scroll moves the cell away from under a still pointer: the readout goes until the pointer moves.
  useEffect(() => {
    if (!hover) return;
    const leave = (): void => setHover(null);
    window.addEventListener('scroll', leave, { passive: true, once: true });
    return () => window.removeEventListener('scroll', leave);
  }, [hover]);
  const onHover = (next: Hovered, event: MouseEvent<SVGRectElement>): void => {
    pointer.current = { x: event.clientX, y: event.clientY };
    if (next.key !== hover?.key || next.agent !== hover.agent || next.text !== hover.text) setHover(next);
    else if (readout.current) placeReadout(readout.current, event.clientX, event.clientY);
  };
  const agents = useMemo(() => (shown === 'all' ? labels.map((_, t) => t) : [shown]), [shown, labels]);
  const max = useMemo(() => {
    let top = 0;
    for (const cell of atlas.cells.values())
      for (const t of agents) {
        if (metric === 'sharedWith' && t === other) continue;
        const ratio = atlasRatio(cell.stats, metric, t, other);
        if (ratio) top = Math.max(top, share(ratio));
      }
    return top;
  }, [atlas, agents, metric, other]);
  const selectedCell = [...atlas.cells.values()].find(
    (c) =>
      filter.names !== null &&
      c.tensors.length === filter.names.length &&
      c.tensors.every((n, i) => n === filter.names?.[i]),
  );
  const selected = selectedCell ? atlasKey(selectedCell.row, selectedCell.module) : null;
  return (
    <figure className="card studio-chart atlas" data-testid="atlas" ref={figure}>
      <figcaption className="studio-chart__head">
        <h3>Atlas: where each agent changed the model, layer × module</h3>
        <ExportButtons target={figure} name={`atlas-${metric}`} png />
      </figcaption>
      <div className="atlas__controls" data-export-skip="">
        <Choice
          id={`${id}-metric`}
          label="Colour by"
          testId="atlas-metric"
          value={metric}
          options={ATLAS_METRICS.map((m) => [m, METRIC_TEXT[m]])}
          onChange={(v) => setMetric(v as AtlasMetric)}
        />
        {metric === 'sharedWith' && (
          <Choice
            id={`${id}-other`}
            label="Shared with"
            testId="atlas-other"
            value={String(other)}
            options={labels.map((label, t) => [String(t), label])}
            onChange={(v) => setOther(Number(v))}
          />
        )}
        <Choice
          id={`${id}-scale`}
          label="Scale"
          testId="atlas-scale"
          value={scale}
          options={Object.entries(SCALES)}
          onChange={(v) => setScale(v as Scale)}
        />
        <Choice
          id={`${id}-agent`}
          label="Agents"
          testId="atlas-agent"
          value={String(shown)}
          options={[
            ['all', 'all, side by side'],
            ...labels.map((label, t): [string, string] => [String(t), label]),
          ]}
          onChange={(v) => setShown(v === 'all' ? 'all' : Number(v))}
        />
      </div>
      <p className="atlas__what">
        {METRIC_TEXT[metric]}
        {metric === 'sharedWith' ? ` (${labels[other] ?? ''})` : ''}; {SCALES[scale]} scale from 0 to the
        largest cell shown. Rows: embeddings, layers 0…
        {Math.max(0, atlas.rows.filter((r) => /\.\d+$/.test(r)).length - 1)}, final norm, head.
      </p>
      <RampLegend
        max={max}
        scale={scale}
        format={percentTick}
        offScale={metric === 'sharedWith' ? 'n/a (itself, or 0 changed)' : 'n/a (nothing to divide)'}
        testId="atlas-legend"
      />
      <div className="atlas__grids" onMouseLeave={() => setHover(null)}>
        {agents.map((t) => (
          <AgentGrid
            key={t}
            atlas={atlas}
            agent={t}
            label={labels[t] ?? `agent ${t}`}
            metric={metric}
            other={other}
            max={max}
            scale={scale}
            selected={selected}
            hovered={hover}
            onHover={onHover}
            onSelect={(cell) =>
              onFilter({
                ...NO_FILTER,
                names: selected === atlasKey(cell.row, cell.module) ? null : cell.tensors,
              })
            }
          />
        ))}
      </div>
      <p className="atlas__hint" data-testid="atlas-hint" data-export-skip="">
        Hover a cell for its exact counts; click it to list its tensors in the table below.
      </p>
      <div
        ref={readout}
        className="atlas__readout"
        role="status"
        aria-live="polite"
        hidden={hover === null}
        data-testid="atlas-readout"
        data-export-skip=""
      >
        {hover?.text}
      </div>
    </figure>
  );
}

/** One labelled select of the atlas's controls; options are [value, text] pairs. */
function Choice({
  id,
  label,
  testId,
  value,
  options,
  onChange,
}: {
  id: string;
  label: string;
  testId: string;
  value: string;
  options: readonly (readonly [string, string])[];
  onChange(value: string): void;
}) {
  return (
    <div className="studio-field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} data-testid={testId} onChange={(e) => onChange(e.currentTarget.value)}>
        {options.map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
    </div>
  );
}

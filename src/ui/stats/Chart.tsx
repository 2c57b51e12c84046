// A titled chart card: recharts in a responsive box that scrolls sideways rather than squeezing its
// groups below a readable width, with a PNG button.
import { useRef, type ReactElement, type ReactNode } from 'react';
import { ResponsiveContainer } from 'recharts';
import { formatCompact, formatCount } from '../format.ts';
import { ExportButtons } from './ExportButtons.tsx';

export const CHART_HEIGHT = 260;
/** Room for compact counts ("136.1M") on a Y axis. */
export const COUNT_AXIS_WIDTH = 56;

export function ChartCard({
  title,
  testId,
  file,
  minWidth = 0,
  wide = false,
  legend,
  note,
  children,
}: {
  title: string;
  testId: string;
  /** File name stem of the PNG. */
  file: string;
  /** Below this width the chart scrolls sideways. */
  minWidth?: number;
  /** Spans the whole row of the chart grid (per-layer charts). */
  wide?: boolean;
  /** Drawn under the chart, outside its scroll box, so it stays in view. */
  legend?: ReactNode;
  note?: ReactNode;
  children: ReactElement;
}) {
  const figure = useRef<HTMLElement>(null);
  return (
    <figure
      className={`card studio-chart${wide ? ' studio-chart--wide' : ''}`}
      data-testid={testId}
      ref={figure}
    >
      <figcaption className="studio-chart__head">
        <h3>{title}</h3>
        <ExportButtons target={figure} name={file} png />
      </figcaption>
      <div className="studio-chart__body">
        <ResponsiveContainer width="100%" minWidth={minWidth} height={CHART_HEIGHT}>
          {children}
        </ResponsiveContainer>
      </div>
      {legend}
      {note}
    </figure>
  );
}

/** Axis ticks: compact, every leading digit kept. */
export const compactTick = (value: unknown): string =>
  typeof value === 'number' ? formatCompact(value) : String(value);

/** Tooltips: the exact integer. */
export const countTooltip = (value: unknown): string =>
  typeof value === 'number' ? formatCount(value) : String(value);

/** Group width below which bars stop being readable: a few pixels per bar plus a gap. */
export function chartMinWidth(groups: number, barsPerGroup: number): number {
  return 80 + groups * Math.max(18, barsPerGroup * 5 + 6);
}

/** Tooltip rows in the text colour: series colours (orange, sky blue) are too light for text on white. */
export const TOOLTIP_ITEM_STYLE = { color: '#1b2430' } as const;

/**
 * Axis tick text in the page's text colour: recharts fills ticks with its axis grey (#666), 2.8:1 on
 * the dark panel (e2e/contrast.spec.ts measures every SVG text in both schemes).
 */
export const AXIS_TICK = { fill: 'currentColor' } as const;

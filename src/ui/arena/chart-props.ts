// What the arena panel hands its deferred chart, kept apart from ArenaChart.tsx so that importing
// it does not pull the chart (and recharts) into the page's main chunk.
import type { ArenaRow } from '../../state/studio-slice.ts';

/** The chart's height in pixels; its placeholder takes the same. */
export const ARENA_CHART_HEIGHT = 260;

export interface ArenaChartProps {
  /** In table order: the base, the agents, then the merges. */
  rows: readonly ArenaRow[];
}

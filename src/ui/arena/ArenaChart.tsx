// The arena's bar chart, one group per task and one bar per model: in a chunk of its own with
// recharts, so the page's main chunk carries no chart library.
import { AXIS_TICK } from '../stats/Chart.tsx';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { agentColor, MERGE_COLOR, NEUTRAL_COLOR } from '../studio/colors.ts';
import { ARENA_CHART_HEIGHT, type ArenaChartProps } from './chart-props.ts';

/** Agents take their colour from the studio's one agent map; the base and merges stay neutral. */
function rowColor(rows: readonly { kind: string }[], i: number): { fill: string; opacity: number } {
  const row = rows[i];
  if (row?.kind === 'agent')
    return { fill: agentColor(rows.slice(0, i).filter((r) => r.kind === 'agent').length), opacity: 1 };
  if (row?.kind === 'merge') {
    const merge = rows.slice(0, i).filter((r) => r.kind === 'merge').length;
    return { fill: MERGE_COLOR, opacity: 1 - 0.2 * (merge % 4) };
  }
  return { fill: NEUTRAL_COLOR, opacity: 1 };
}

export function ArenaChart({ rows }: ArenaChartProps) {
  const tasks = rows[0]?.scores.tasks.map((t) => t.name) ?? [];
  const chartRows = tasks.map((task) => {
    const row: Record<string, string | number> = { task };
    for (const r of rows) row[r.label] = r.scores.tasks.find((t) => t.name === task)?.score ?? 0;
    return row;
  });
  return (
    <ResponsiveContainer width="100%" height={ARENA_CHART_HEIGHT}>
      <BarChart data={chartRows}>
        <CartesianGrid strokeDasharray="3 3" />
        <XAxis tick={AXIS_TICK} dataKey="task" />
        <YAxis tick={AXIS_TICK} domain={[0, 1]} />
        <Tooltip formatter={(value) => (typeof value === 'number' ? value.toFixed(3) : String(value))} />
        <Legend />
        {rows.map((r, i) => (
          <Bar
            key={r.key}
            dataKey={r.label}
            fill={rowColor(rows, i).fill}
            fillOpacity={rowColor(rows, i).opacity}
            isAnimationActive={false}
          />
        ))}
      </BarChart>
    </ResponsiveContainer>
  );
}

// The two charts drawn per grouping (layer or module): % changed per agent, and unique vs shared as
// shares of the group's elements (so 136M-element embeddings do not flatten the layers), exact
// integers in the tooltips, shared striped so it differs from unique without colour.
import { useId } from 'react';
import { Bar, BarChart, CartesianGrid, Tooltip, XAxis, YAxis } from 'recharts';
import type { ModelStats } from '../../methods/stats.ts';
import { formatCount } from '../format.ts';
import { agentColor } from '../studio/colors.ts';
import { percent } from './summary.ts';
import { TOOLTIP_ITEM_STYLE, ChartCard, chartMinWidth, AXIS_TICK } from './Chart.tsx';
import { AgentLegend, agentItems } from './AgentLegend.tsx';
import { HatchPatterns, hatchId } from './HatchPattern.tsx';

export interface Group {
  /** The key a click selects (a layerOf() group or a module). */
  key: string;
  /** The axis label (short). */
  label: string;
  stats: ModelStats;
}

/** recharts hands a bar's click its row; the row's key is what to drill into. */
function clickedKey(entry: unknown): string | null {
  const payload = (entry as { payload?: Record<string, unknown> } | null)?.payload;
  const value = payload?.group;
  return typeof value === 'string' ? value : null;
}

type Row = Record<string, string | number>;

function exactTooltip(groups: Group[], labels: string[]) {
  return (value: unknown, name: unknown, item: { payload?: Row }): string => {
    const group = groups.find((g) => g.key === item.payload?.group);
    const text = String(name);
    const t = labels.findIndex((l) => text === l || text.startsWith(`${l} `));
    if (!group || t < 0) return String(value);
    const s = group.stats;
    const part = text.endsWith(' unique')
      ? (s.unique[t] ?? 0)
      : text.endsWith(' shared')
        ? (s.shared[t] ?? 0)
        : (s.changed[t] ?? 0);
    return `${String(value)}% (${formatCount(part)} of ${formatCount(s.numel)})`;
  };
}

export function ChangeCharts({
  noun,
  testIds,
  groups,
  labels,
  onSelect,
  wide = false,
  angled = false,
}: {
  wide?: boolean;
  /** Every label, slanted: module names are long and each one matters. */
  angled?: boolean;
  noun: string;
  testIds: [string, string];
  groups: Group[];
  labels: string[];
  onSelect: (key: string) => void;
}) {
  const patterns = useId().replace(/:/g, '');
  const changedRows = groups.map(({ key, label, stats }) => {
    const row: Row = { group: key, label };
    labels.forEach((agent, t) => {
      row[agent] = Number(percent(stats.changed[t] ?? 0, stats.numel, 2));
    });
    return row;
  });
  const splitRows = groups.map(({ key, label, stats }) => {
    const row: Row = { group: key, label };
    labels.forEach((agent, t) => {
      row[`${agent} unique`] = Number(percent(stats.unique[t] ?? 0, stats.numel, 2));
      row[`${agent} shared`] = Number(percent(stats.shared[t] ?? 0, stats.numel, 2));
    });
    return row;
  });
  const minWidth = chartMinWidth(groups.length, labels.length);
  const tooltip = exactTooltip(groups, labels);
  const click = (entry: unknown): void => {
    const key = clickedKey(entry);
    if (key !== null) onSelect(key);
  };
  const file = noun.replace(/\s+/g, '-');
  const axis = angled
    ? {
        dataKey: 'label',
        interval: 0,
        angle: -40,
        textAnchor: 'end' as const,
        height: 100,
        tick: { ...AXIS_TICK, fontSize: 11 },
      }
    : { dataKey: 'label', interval: 'preserveStartEnd' as const, minTickGap: 4 };
  return (
    <>
      <ChartCard
        title={`Changed elements per ${noun} (% of its elements)`}
        testId={testIds[0]}
        file={`changed-per-${file}`}
        minWidth={minWidth}
        wide={wide}
        legend={<AgentLegend items={agentItems(labels)} />}
      >
        <BarChart data={changedRows} margin={{ top: 8, right: 8, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis tick={AXIS_TICK} {...axis} />
          <YAxis tick={AXIS_TICK} unit="%" width={52} />
          <Tooltip
            itemStyle={TOOLTIP_ITEM_STYLE}
            formatter={tooltip}
            labelFormatter={(_, items) => String(items[0]?.payload?.group ?? '')}
          />
          {labels.map((label, t) => (
            <Bar
              key={label}
              dataKey={label}
              fill={agentColor(t)}
              isAnimationActive={false}
              cursor="pointer"
              onClick={click}
            />
          ))}
        </BarChart>
      </ChartCard>
      <ChartCard
        title={`Unique (solid) vs shared (striped) per ${noun} (% of its elements)`}
        testId={testIds[1]}
        file={`unique-shared-per-${file}`}
        minWidth={minWidth}
        wide={wide}
        legend={<AgentLegend items={agentItems(labels)} split />}
      >
        <BarChart data={splitRows} margin={{ top: 8, right: 8, bottom: 4, left: 0 }}>
          <HatchPatterns prefix={patterns} colors={labels.map((_, t) => agentColor(t))} />
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis tick={AXIS_TICK} {...axis} />
          <YAxis tick={AXIS_TICK} unit="%" width={52} />
          <Tooltip
            itemStyle={TOOLTIP_ITEM_STYLE}
            formatter={tooltip}
            labelFormatter={(_, items) => String(items[0]?.payload?.group ?? '')}
          />
          {labels.flatMap((label, t) => [
            <Bar
              key={`${label}-u`}
              dataKey={`${label} unique`}
              stackId={label}
              fill={agentColor(t)}
              isAnimationActive={false}
              cursor="pointer"
              onClick={click}
            />,
            <Bar
              key={`${label}-s`}
              dataKey={`${label} shared`}
              stackId={label}
              fill={`url(#${hatchId(patterns, t)})`}
              stroke={agentColor(t)}
              isAnimationActive={false}
              cursor="pointer"
              onClick={click}
            />,
          ])}
        </BarChart>
      </ChartCard>
    </>
  );
}

// How the agents' changes overlap: the k-histogram beside the exact agent sets (UpSet), the |τ|
// magnitude histogram with ε marked, and the pairwise matrix with its per-layer breakdown.
import { useMemo } from 'react';
import { Bar, BarChart, CartesianGrid, ReferenceLine, Tooltip, XAxis, YAxis } from 'recharts';
import { AgentLegend, agentItems } from './AgentLegend.tsx';
import { ALERT_COLOR, agentColor, NEUTRAL_COLOR } from '../studio/colors.ts';
import { binLabel, epsilonBin, magnitudeRange, resaveSuspects } from './summary.ts';
import {
  TOOLTIP_ITEM_STYLE,
  ChartCard,
  compactTick,
  COUNT_AXIS_WIDTH,
  countTooltip,
  AXIS_TICK,
} from './Chart.tsx';
import { PairMatrix } from './PairMatrix.tsx';
import { UpSet } from './UpSet.tsx';
import type { AnalysisProps } from './types.ts';

export function OverlapViews({ analysis, labels }: AnalysisProps) {
  const totals = analysis.totals;
  const histogram = totals.counts.map((count, c) => ({ agents: String(c), elements: count }));
  const magnitudeRows = useMemo(() => {
    const [low, high] = magnitudeRange(totals, analysis.epsilon);
    const rows: Record<string, string | number>[] = [];
    for (let b = low; b <= high; b++) {
      const row: Record<string, string | number> = { bin: binLabel(b) };
      labels.forEach((label, t) => {
        row[label] = totals.magnitude[t]?.[b] ?? 0;
      });
      rows.push(row);
    }
    return rows;
  }, [totals, analysis.epsilon, labels]);
  const suspects = resaveSuspects(totals);
  return (
    <>
      <div className="studio-charts">
        <ChartCard
          title="Elements changed by exactly k agents"
          testId="chart-overlap"
          file="changed-by-k-agents"
        >
          <BarChart data={histogram} margin={{ top: 8, right: 8, bottom: 18, left: 0 }}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis
              tick={AXIS_TICK}
              dataKey="agents"
              label={{ value: 'k agents', position: 'insideBottom', offset: -12, fill: 'currentColor' }}
            />
            <YAxis tick={AXIS_TICK} tickFormatter={compactTick} width={COUNT_AXIS_WIDTH} />
            <Tooltip
              itemStyle={TOOLTIP_ITEM_STYLE}
              formatter={countTooltip}
              labelFormatter={(k) => `changed by exactly ${String(k)} agents`}
            />
            <Bar dataKey="elements" fill={NEUTRAL_COLOR} isAnimationActive={false} />
          </BarChart>
        </ChartCard>
        <UpSet totals={totals} labels={labels} />
        <ChartCard
          title={`|τ| of changed elements (ε = ${analysis.epsilon} marked)`}
          testId="chart-magnitude"
          file="tau-magnitude"
          legend={<AgentLegend items={agentItems(labels)} />}
        >
          <BarChart data={magnitudeRows} margin={{ top: 16, right: 8, bottom: 4, left: 0 }}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis tick={AXIS_TICK} dataKey="bin" interval="preserveStartEnd" />
            <YAxis tick={AXIS_TICK} tickFormatter={compactTick} width={COUNT_AXIS_WIDTH} />
            <Tooltip
              itemStyle={TOOLTIP_ITEM_STYLE}
              formatter={countTooltip}
              labelFormatter={(bin) => `|τ| in [${String(bin)}, ×2)`}
            />
            <ReferenceLine
              x={binLabel(epsilonBin(analysis.epsilon))}
              stroke={ALERT_COLOR}
              strokeDasharray="4 2"
              label={{ value: 'ε', position: 'insideTopRight', fill: 'currentColor' }}
            />
            {labels.map((label, t) => (
              <Bar key={label} dataKey={label} fill={agentColor(t)} isAnimationActive={false} />
            ))}
          </BarChart>
        </ChartCard>
      </div>
      <PairMatrix analysis={analysis} labels={labels} />
      {suspects.some(Boolean) && (
        <p className="notice notice--warn" data-testid="resave-warning">
          {labels.filter((_, t) => suspects[t]).join(', ')}: nearly every change is at most one ulp of the
          base value. That is what a dtype round trip or re-save looks like, not training; check these files.
        </p>
      )}
    </>
  );
}

// Per layer: % changed and unique vs shared per agent, the sign-conflict rate, and the per-layer
// table whose Σ row equals the totals; a bar or a row button drills the tensor table into a layer.
import { useMemo } from 'react';
import { Bar, BarChart, CartesianGrid, Tooltip, XAxis, YAxis } from 'recharts';
import { AgentLegend } from './AgentLegend.tsx';
import { formatCount } from '../format.ts';
import { ALERT_COLOR } from '../studio/colors.ts';
import { idPart } from '../studio/common.tsx';
import { layerStats, sharedElements, shortLayerLabel, signConflictRate, type LayerStats } from './summary.ts';
import { ChangeCharts } from './ChangeCharts.tsx';
import { TOOLTIP_ITEM_STYLE, ChartCard, chartMinWidth, AXIS_TICK } from './Chart.tsx';
import { GroupTable } from './GroupTable.tsx';
import type { AnalysisProps, DrillProps } from './types.ts';

export function LayerViews({ analysis, labels, filter, onFilter }: AnalysisProps & DrillProps) {
  const layers = useMemo(() => layerStats(analysis.tensors, labels.length), [analysis, labels.length]);
  const groups = layers.map(({ layer, stats }) => ({ key: layer, label: shortLayerLabel(layer), stats }));
  const conflictRows = layers.map(({ layer, stats }) => ({
    group: layer,
    label: shortLayerLabel(layer),
    rate: Number((100 * signConflictRate(stats)).toFixed(2)),
    conflicts: stats.signConflicts,
    shared: sharedElements(stats),
  }));
  return (
    <>
      <div className="studio-charts">
        <ChangeCharts
          noun="layer"
          testIds={['chart-changed', 'chart-unique-shared']}
          groups={groups}
          labels={labels}
          wide
          onSelect={(layer) => onFilter({ ...filter, layer, names: null })}
        />
        <ChartCard
          title="Sign conflicts per layer (% of shared elements)"
          testId="chart-sign-conflicts"
          file="sign-conflicts-per-layer"
          minWidth={chartMinWidth(layers.length, 1)}
          wide
          legend={<AgentLegend items={[{ label: 'sign-conflict rate', color: ALERT_COLOR }]} />}
        >
          <BarChart data={conflictRows} margin={{ top: 8, right: 8, bottom: 4, left: 0 }}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis tick={AXIS_TICK} dataKey="label" interval="preserveStartEnd" minTickGap={4} />
            <YAxis tick={AXIS_TICK} unit="%" width={52} />
            <Tooltip
              itemStyle={TOOLTIP_ITEM_STYLE}
              labelFormatter={(_, items) => String(items[0]?.payload?.group ?? '')}
              formatter={(value, _name, item) => {
                const row = item.payload as { conflicts: number; shared: number };
                return `${String(value)}% (${formatCount(row.conflicts)} of ${formatCount(row.shared)})`;
              }}
            />
            <Bar dataKey="rate" name="sign-conflict rate" fill={ALERT_COLOR} isAnimationActive={false} />
          </BarChart>
        </ChartCard>
      </div>
      <LayerTable layers={layers} labels={labels} filter={filter} onFilter={onFilter} />
    </>
  );
}

function LayerTable({
  layers,
  labels,
  filter,
  onFilter,
}: { layers: LayerStats[]; labels: string[] } & DrillProps) {
  return (
    <GroupTable
      prefix="layer"
      testId="stats-layers"
      caption="Per layer (integer counts; the last row sums them and equals the totals above). Choose a layer (or click its bar) to list its tensors below."
      exportName="statistics-per-layer"
      head="Layer"
      sumLabel="Σ layers"
      labels={labels}
      tall
      rows={layers.map(({ layer, tensors, stats }) => ({
        key: layer,
        id: idPart(layer),
        label: <code>{layer}</code>,
        tensors,
        stats,
        drillLabel: `Show the tensors of ${layer}`,
        pressed: filter.layer === layer,
        onDrill: () => onFilter({ ...filter, names: null, layer: filter.layer === layer ? null : layer }),
      }))}
    />
  );
}

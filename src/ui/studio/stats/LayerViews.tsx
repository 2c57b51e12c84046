// Per layer: % changed and unique vs shared per agent, the sign-conflict rate, and the per-layer
// table whose Σ row equals the totals; a bar or a row button drills the tensor table into a layer.
import { useMemo, useRef } from 'react';
import { Bar, BarChart, CartesianGrid, Tooltip, XAxis, YAxis } from 'recharts';
import { AgentLegend } from './AgentLegend.tsx';
import type { ModelStats } from '../../../methods/stats.ts';
import { formatCount } from '../../format.ts';
import { ALERT_COLOR } from '../colors.ts';
import { idPart } from '../common.tsx';
import {
  layerStats,
  sharedElements,
  shortLayerLabel,
  signConflictRate,
  type LayerStats,
} from '../summary.ts';
import { ChangeCharts } from './ChangeCharts.tsx';
import { TOOLTIP_ITEM_STYLE, ChartCard, chartMinWidth } from './Chart.tsx';
import { ExportButtons } from './ExportButtons.tsx';
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
            <XAxis dataKey="label" interval="preserveStartEnd" minTickGap={4} />
            <YAxis unit="%" width={52} />
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
  const box = useRef<HTMLDivElement>(null);
  return (
    <div className="studio-scroll studio-scroll--tall studio-pinned" ref={box}>
      <table className="studio-table" data-testid="stats-layers">
        <caption>
          Per layer (integer counts; the last row sums them and equals the totals above). Choose a layer (or
          click its bar) to list its tensors below.{' '}
          <ExportButtons target={box} name="statistics-per-layer" csv />
        </caption>
        <thead>
          <tr>
            <th scope="col">Layer</th>
            <th scope="col">Tensors</th>
            <th scope="col">Elements</th>
            {labels.map((label) => (
              <th key={label} scope="col">
                {label}: changed / unique
              </th>
            ))}
            <th scope="col">Sign conflicts</th>
          </tr>
        </thead>
        <tbody>
          {layers.map(({ layer, tensors, stats }) => (
            <tr key={layer} data-testid={`layer-row-${idPart(layer)}`}>
              <th scope="row">
                <button
                  type="button"
                  className="studio-drill"
                  data-testid={`layer-filter-${idPart(layer)}`}
                  aria-pressed={filter.layer === layer}
                  aria-label={`Show the tensors of ${layer}`}
                  onClick={() =>
                    onFilter({ ...filter, names: null, layer: filter.layer === layer ? null : layer })
                  }
                >
                  <code>{layer}</code>
                </button>
              </th>
              <td>{tensors}</td>
              <td data-testid="layer-numel">{formatCount(stats.numel)}</td>
              {labels.map((label, t) => (
                <td key={label} data-testid={`layer-agent-${idPart(label)}`}>
                  {formatCount(stats.changed[t] ?? 0)} / {formatCount(stats.unique[t] ?? 0)}
                </td>
              ))}
              <td>{formatCount(stats.signConflicts)}</td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <LayerSumRow layers={layers.map((l) => l.stats)} labels={labels} />
        </tfoot>
      </table>
    </div>
  );
}

function LayerSumRow({ layers, labels }: { layers: ModelStats[]; labels: string[] }) {
  const sum = (pick: (s: ModelStats) => number): number => layers.reduce((a, s) => a + pick(s), 0);
  return (
    <tr data-testid="layer-row-sum">
      <th scope="row">Σ layers</th>
      <td>{formatCount(sum((s) => s.tensors))}</td>
      <td data-testid="layer-numel">{formatCount(sum((s) => s.numel))}</td>
      {labels.map((label, t) => (
        <td key={label} data-testid={`layer-agent-${idPart(label)}`}>
          {formatCount(sum((s) => s.changed[t] ?? 0))} / {formatCount(sum((s) => s.unique[t] ?? 0))}
        </td>
      ))}
      <td>{formatCount(sum((s) => s.signConflicts))}</td>
    </tr>
  );
}

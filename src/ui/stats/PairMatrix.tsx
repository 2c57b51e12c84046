// The pairwise overlap matrix as counts, Jaccard or share of the smaller agent, the diagonal (each
// agent's own changes) outside the colour scale; a pair's button shows its overlap per layer.
import { useMemo, useRef, useState } from 'react';
import { Bar, BarChart, CartesianGrid, Tooltip, XAxis, YAxis } from 'recharts';
import { AgentLegend } from './AgentLegend.tsx';
import { formatCompact, formatCount } from '../format.ts';
import { agentColor, OFF_SCALE_COLOR, rampColor, textOn } from '../studio/colors.ts';
import { idPart } from '../studio/common.tsx';
import {
  layerStats,
  OVERLAP_MODES,
  overlapRatio,
  pairwiseOverlap,
  percent,
  share,
  shortLayerLabel,
  type OverlapMode,
} from './summary.ts';
import { TOOLTIP_ITEM_STYLE, ChartCard, chartMinWidth, AXIS_TICK } from './Chart.tsx';
import { ExportButtons } from './ExportButtons.tsx';
import { RampLegend } from './RampLegend.tsx';
import type { AnalysisProps } from './types.ts';

const MODE_TEXT: Record<OverlapMode, string> = {
  count: 'elements changed by both',
  jaccard: 'Jaccard: both / either',
  smaller: 'both / the smaller agent’s changes',
};

export function PairMatrix({ analysis, labels }: AnalysisProps) {
  const totals = analysis.totals;
  const pairs = pairwiseOverlap(totals);
  const [mode, setMode] = useState<OverlapMode>('count');
  const [pair, setPair] = useState<[number, number] | null>(null);
  const box = useRef<HTMLElement>(null);
  const changed = (t: number): number => totals.changed[t] ?? 0;
  const value = (a: number, b: number): number => {
    const both = pairs?.[a]?.[b] ?? 0;
    return mode === 'count' ? both : share(overlapRatio(both, changed(a), changed(b), mode));
  };
  let max = 0;
  labels.forEach((_, a) =>
    labels.forEach((__, b) => {
      if (a !== b) max = Math.max(max, value(a, b));
    }),
  );
  const shownValue = (a: number, b: number): string =>
    mode === 'count' || a === b
      ? formatCount(a === b ? changed(a) : value(a, b))
      : `${(100 * value(a, b)).toFixed(1)}%`;
  return (
    <figure className="card studio-chart" data-testid="pairwise" ref={box}>
      <figcaption className="studio-chart__head">
        <h3>Pairwise overlap ({MODE_TEXT[mode]})</h3>
        <ExportButtons target={box} name={`pairwise-overlap-${mode}`} png csv />
      </figcaption>
      {pairs ? (
        <>
          <div className="studio-segmented" role="group" aria-label="Overlap measure" data-export-skip="">
            {OVERLAP_MODES.map((m) => (
              <button
                key={m}
                type="button"
                aria-pressed={mode === m}
                data-testid={`pairwise-mode-${m}`}
                onClick={() => setMode(m)}
              >
                {MODE_TEXT[m]}
              </button>
            ))}
          </div>
          <RampLegend
            max={max}
            scale="linear"
            format={(x) => (mode === 'count' ? formatCompact(x) : `${(100 * x).toFixed(1)}%`)}
            offScale="the agent itself (its changed count)"
            testId="pairwise-legend"
          />
          <div className="studio-scroll studio-pinned">
            <table className="studio-table studio-matrix">
              <caption>
                Colour: 0 to the largest pair (
                {mode === 'count' ? formatCount(max) : `${(100 * max).toFixed(1)}%`}); the diagonal (grey) is
                each agent’s own changes. Choose a pair for its overlap per layer.
              </caption>
              <thead>
                <tr>
                  <th scope="col">Agent</th>
                  {labels.map((l) => (
                    <th key={l} scope="col">
                      {l}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {labels.map((row, a) => (
                  <tr key={row}>
                    <th scope="row">{row}</th>
                    {labels.map((col, b) => {
                      const both = pairs[a]?.[b] ?? 0;
                      const bg = a === b ? OFF_SCALE_COLOR : rampColor(max > 0 ? value(a, b) / max : 0);
                      const title =
                        a === b
                          ? `${row} changed ${formatCount(changed(a))}`
                          : `${formatCount(both)} changed by both = ${percent(both, changed(a))}% of ${row}'s, ${percent(both, changed(b))}% of ${col}'s changes; Jaccard ${percent(both, changed(a) + changed(b) - both)}%`;
                      return (
                        <td
                          key={col}
                          data-testid={`pair-${idPart(row)}-${idPart(col)}`}
                          style={{ background: bg, color: textOn(bg) }}
                          title={title}
                        >
                          {a === b ? (
                            shownValue(a, b)
                          ) : (
                            <button
                              type="button"
                              className="studio-matrix__pick"
                              aria-pressed={pair?.[0] === a && pair[1] === b}
                              aria-label={`${title}. Show per layer`}
                              onClick={() => setPair([a, b])}
                            >
                              {shownValue(a, b)}
                            </button>
                          )}
                        </td>
                      );
                    })}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {pair && <PairLayers analysis={analysis} labels={labels} pair={pair} />}
        </>
      ) : (
        <p className="muted" data-testid="pairwise-unavailable">
          Pairs are counted for up to 8 agents; beyond that the statistics count, per agent, how many others
          changed the same element, not which ones.
        </p>
      )}
    </figure>
  );
}

/** One pair's overlap per layer: both as a share of each agent's changes in the layer. */
function PairLayers({ analysis, labels, pair: [a, b] }: AnalysisProps & { pair: [number, number] }) {
  const layers = useMemo(() => layerStats(analysis.tensors, labels.length), [analysis, labels.length]);
  const la = labels[a] ?? '';
  const lb = labels[b] ?? '';
  const rows = layers.map(({ layer, stats }) => {
    const both = stats.pairs?.[a]?.[b] ?? 0;
    return {
      group: layer,
      label: shortLayerLabel(layer),
      both,
      [`of ${la}'s`]: Number(percent(both, stats.changed[a] ?? 0, 2)),
      [`of ${lb}'s`]: Number(percent(both, stats.changed[b] ?? 0, 2)),
    };
  });
  return (
    <ChartCard
      title={`${la} ∩ ${lb} per layer (% of each agent's changes in the layer)`}
      testId="pair-layers"
      file={`overlap-${la}-${lb}-per-layer`}
      minWidth={chartMinWidth(layers.length, 2)}
      legend={
        <AgentLegend
          items={[
            { label: `of ${la}'s changes`, color: agentColor(a) },
            { label: `of ${lb}'s changes`, color: agentColor(b) },
          ]}
        />
      }
    >
      <BarChart data={rows} margin={{ top: 8, right: 8, bottom: 4, left: 0 }}>
        <CartesianGrid strokeDasharray="3 3" />
        <XAxis tick={AXIS_TICK} dataKey="label" interval="preserveStartEnd" minTickGap={4} />
        <YAxis tick={AXIS_TICK} unit="%" width={52} />
        <Tooltip
          itemStyle={TOOLTIP_ITEM_STYLE}
          labelFormatter={(_, items) => {
            const row = items[0]?.payload as { group: string; both: number } | undefined;
            return row ? `${row.group}: ${formatCount(row.both)} changed by both` : '';
          }}
          formatter={(v) => `${String(v)}%`}
        />
        <Bar dataKey={`of ${la}'s`} fill={agentColor(a)} isAnimationActive={false} />
        <Bar dataKey={`of ${lb}'s`} fill={agentColor(b)} isAnimationActive={false} />
      </BarChart>
    </ChartCard>
  );
}

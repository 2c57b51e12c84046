// Step 2: where the agents changed the base and where they overlap, from the worker's statistics
// pass: totals, per-layer and per-module-type charts with exact numbers in their tooltips, and a
// sortable tensor table that a layer or module drills down into.
import { Fragment, useId, useMemo, useState, type ReactElement } from 'react';
import {
  Bar,
  BarChart,
  CartesianGrid,
  Legend,
  ReferenceLine,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts';
import type { AnalysisResult } from '../../engine/driver.ts';
import type { TensorStats } from '../../engine/types.ts';
import type { ModelStats } from '../../methods/stats.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { formatCount } from '../format.ts';
import { agentColor, ErrorBox, idPart, ProgressBar } from './common.tsx';
import './analysis.css';
import {
  binLabel,
  epsilonBin,
  filterTensors,
  isFiltered,
  layerOf,
  layerStats,
  magnitudeRange,
  MODULE_TYPES,
  moduleStats,
  NO_FILTER,
  pairwiseOverlap,
  percent,
  resaveSuspects,
  sharedElements,
  signConflictRate,
  type ModuleType,
  type TensorFilter,
} from './summary.ts';

const CHART_HEIGHT = 260;

function Chart({ title, testId, children }: { title: string; testId: string; children: ReactElement }) {
  return (
    <figure className="card studio-chart" data-testid={testId}>
      <figcaption>
        <h3>{title}</h3>
      </figcaption>
      <ResponsiveContainer width="100%" height={CHART_HEIGHT}>
        {children}
      </ResponsiveContainer>
    </figure>
  );
}

const countTooltip = (value: unknown): string =>
  typeof value === 'number' ? formatCount(value) : String(value);

function TotalsTable({ totals, labels }: { totals: ModelStats; labels: string[] }) {
  return (
    <div className="studio-scroll">
      <table className="studio-table" data-testid="stats-totals">
        <thead>
          <tr>
            <th scope="col">Agent</th>
            <th scope="col">Changed</th>
            <th scope="col">of all</th>
            <th scope="col">Unique</th>
            <th scope="col">of changed</th>
            <th scope="col">Shared</th>
            <th scope="col">ρ = shared / unique</th>
          </tr>
        </thead>
        <tbody>
          {labels.map((label, t) => {
            const id = idPart(label);
            const rho = totals.rho[t] ?? 0;
            return (
              <tr key={label} data-testid={`stats-agent-${id}`}>
                <th scope="row">{label}</th>
                <td data-testid={`stats-changed-${id}`}>{formatCount(totals.changed[t] ?? 0)}</td>
                <td>{percent(totals.changed[t] ?? 0, totals.numel)}%</td>
                <td data-testid={`stats-unique-${id}`}>{formatCount(totals.unique[t] ?? 0)}</td>
                <td>{percent(totals.unique[t] ?? 0, totals.changed[t] ?? 0)}%</td>
                <td data-testid={`stats-shared-${id}`}>{formatCount(totals.shared[t] ?? 0)}</td>
                <td>{Number.isFinite(rho) ? rho.toFixed(4) : '∞'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <p className="studio-inline-facts">
        <span>
          Elements: <strong data-testid="stats-numel">{formatCount(totals.numel)}</strong>
        </span>
        {totals.counts.map((count, c) => (
          <span key={c}>
            {c === 0 ? 'unchanged' : c === 1 ? 'unique' : `by ${c} agents`}:{' '}
            <strong data-testid={`stats-count-${c}`}>{formatCount(count)}</strong>
          </span>
        ))}
        <span>
          sign conflicts:{' '}
          <strong data-testid="stats-sign-conflicts">{formatCount(totals.signConflicts)}</strong> of{' '}
          {formatCount(sharedElements(totals))} shared
        </span>
      </p>
    </div>
  );
}

/** recharts hands a bar's click its row; the row's `layer` (or `module`) is what to drill into. */
function clickedKey(entry: unknown, key: 'layer' | 'module'): string | null {
  const payload = (entry as { payload?: Record<string, unknown> } | null)?.payload;
  const value = payload?.[key];
  return typeof value === 'string' ? value : null;
}

interface DrillProps {
  filter: TensorFilter;
  onFilter(filter: TensorFilter): void;
}

/** The two charts drawn per grouping (layer or module type): % changed per agent, and unique vs shared. */
function ChangeCharts({
  groupKey,
  noun,
  testIds,
  changedRows,
  splitRows,
  labels,
  onSelect,
}: {
  groupKey: 'layer' | 'module';
  noun: string;
  testIds: [string, string];
  changedRows: Record<string, string | number>[];
  splitRows: Record<string, string | number>[];
  labels: string[];
  onSelect: (key: string | null) => void;
}) {
  const title = noun === 'layer' ? 'layer' : 'type';
  return (
    <>
      <Chart title={`Changed elements per ${noun} (% of the ${title})`} testId={testIds[0]}>
        <BarChart data={changedRows}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey={groupKey} />
          <YAxis unit="%" />
          <Tooltip formatter={(value) => `${String(value)}%`} />
          <Legend />
          {labels.map((label, t) => (
            <Bar
              key={label}
              dataKey={label}
              fill={agentColor(t)}
              isAnimationActive={false}
              cursor="pointer"
              onClick={(entry) => onSelect(clickedKey(entry, groupKey))}
            />
          ))}
        </BarChart>
      </Chart>
      <Chart title={`Unique vs shared changes per ${noun} (elements)`} testId={testIds[1]}>
        <BarChart data={splitRows}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey={groupKey} />
          <YAxis tickFormatter={countTooltip} width={64} />
          <Tooltip formatter={countTooltip} />
          <Legend />
          {labels.flatMap((label, t) => [
            <Bar
              key={`${label}-u`}
              dataKey={`${label} unique`}
              stackId={label}
              fill={agentColor(t)}
              isAnimationActive={false}
            />,
            <Bar
              key={`${label}-s`}
              dataKey={`${label} shared`}
              stackId={label}
              fill={agentColor(t)}
              fillOpacity={0.4}
              isAnimationActive={false}
            />,
          ])}
        </BarChart>
      </Chart>
    </>
  );
}

function LayerCharts({
  analysis,
  labels,
  filter,
  onFilter,
}: { analysis: AnalysisResult; labels: string[] } & DrillProps) {
  const layers = useMemo(() => layerStats(analysis.tensors, labels.length), [analysis, labels.length]);
  const selectLayer = (layer: string | null): void => {
    if (layer !== null) onFilter({ ...filter, layer });
  };
  const changedRows = layers.map(({ layer, stats }) => {
    const row: Record<string, string | number> = { layer };
    labels.forEach((label, t) => {
      row[label] = Number(percent(stats.changed[t] ?? 0, stats.numel, 2));
    });
    return row;
  });
  const splitRows = layers.map(({ layer, stats }) => {
    const row: Record<string, string | number> = { layer };
    labels.forEach((label, t) => {
      row[`${label} unique`] = stats.unique[t] ?? 0;
      row[`${label} shared`] = stats.shared[t] ?? 0;
    });
    return row;
  });
  const conflictRows = layers.map(({ layer, stats }) => ({
    layer,
    rate: Number((100 * signConflictRate(stats)).toFixed(2)),
    conflicts: stats.signConflicts,
    shared: sharedElements(stats),
  }));
  return (
    <>
      <div className="studio-charts">
        <ChangeCharts
          groupKey="layer"
          noun="layer"
          testIds={['chart-changed', 'chart-unique-shared']}
          changedRows={changedRows}
          splitRows={splitRows}
          labels={labels}
          onSelect={selectLayer}
        />
        <Chart title="Sign conflicts per layer (% of shared elements)" testId="chart-sign-conflicts">
          <BarChart data={conflictRows}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="layer" />
            <YAxis unit="%" />
            <Tooltip
              formatter={(value, _name, item) => {
                const row = item.payload as { conflicts: number; shared: number };
                return `${String(value)}% (${formatCount(row.conflicts)} of ${formatCount(row.shared)})`;
              }}
            />
            <Legend />
            <Bar dataKey="rate" name="sign-conflict rate" fill="#b3261e" isAnimationActive={false} />
          </BarChart>
        </Chart>
      </div>
      <div className="studio-scroll">
        <table className="studio-table" data-testid="stats-layers">
          <caption>
            Per layer (integer counts; the last row sums them and equals the totals above). Choose a layer (or
            click its bar) to list its tensors below.
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
                    onClick={() => onFilter({ ...filter, layer: filter.layer === layer ? null : layer })}
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
    </>
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

function ModuleViews({
  analysis,
  labels,
  filter,
  onFilter,
}: { analysis: AnalysisResult; labels: string[] } & DrillProps) {
  const modules = useMemo(() => moduleStats(analysis.tensors, labels.length), [analysis, labels.length]);
  const changedRows = modules.map(({ module, stats }) => {
    const row: Record<string, string | number> = { module };
    labels.forEach((label, t) => {
      row[label] = Number(percent(stats.changed[t] ?? 0, stats.numel, 2));
    });
    return row;
  });
  const splitRows = modules.map(({ module, stats }) => {
    const row: Record<string, string | number> = { module };
    labels.forEach((label, t) => {
      row[`${label} unique`] = stats.unique[t] ?? 0;
      row[`${label} shared`] = stats.shared[t] ?? 0;
    });
    return row;
  });
  const selectModule = (module: string | null): void => {
    if (module !== null) onFilter({ ...filter, module: module as ModuleType });
  };
  const sum = (pick: (s: ModelStats) => number): number => modules.reduce((a, m) => a + pick(m.stats), 0);
  return (
    <>
      <div className="studio-charts">
        <ChangeCharts
          groupKey="module"
          noun="module type"
          testIds={['chart-module-changed', 'chart-module-split']}
          changedRows={changedRows}
          splitRows={splitRows}
          labels={labels}
          onSelect={selectModule}
        />
      </div>
      <div className="studio-scroll">
        <table className="studio-table" data-testid="module-table">
          <caption>
            Per module type, from the tensor names (attention, MLP, embeddings, norms, head, other); the last
            row sums them and equals the totals above. Choose a type to list its tensors below.
          </caption>
          <thead>
            <tr>
              <th scope="col">Module type</th>
              <th scope="col">Tensors</th>
              <th scope="col">Elements</th>
              {labels.map((label) => (
                <th key={label} scope="col">
                  {label}: changed / unique / shared
                </th>
              ))}
              <th scope="col">Sign conflicts</th>
            </tr>
          </thead>
          <tbody>
            {modules.map(({ module, tensors, stats }) => (
              <tr key={module} data-testid={`module-row-${module}`}>
                <th scope="row">
                  <button
                    type="button"
                    className="studio-drill"
                    data-testid={`module-filter-${module}`}
                    aria-pressed={filter.module === module}
                    aria-label={`Show the ${module} tensors`}
                    onClick={() => onFilter({ ...filter, module: filter.module === module ? null : module })}
                  >
                    {module}
                  </button>
                </th>
                <td>{formatCount(tensors)}</td>
                <td data-testid="module-numel">{formatCount(stats.numel)}</td>
                {labels.map((label, t) => (
                  <td key={label} data-testid={`module-agent-${idPart(label)}`}>
                    {formatCount(stats.changed[t] ?? 0)} / {formatCount(stats.unique[t] ?? 0)} /{' '}
                    {formatCount(stats.shared[t] ?? 0)}
                  </td>
                ))}
                <td>{formatCount(stats.signConflicts)}</td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr data-testid="module-row-sum">
              <th scope="row">Σ module types</th>
              <td>{formatCount(sum((s) => s.tensors))}</td>
              <td data-testid="module-numel">{formatCount(sum((s) => s.numel))}</td>
              {labels.map((label, t) => (
                <td key={label} data-testid={`module-agent-${idPart(label)}`}>
                  {formatCount(sum((s) => s.changed[t] ?? 0))} / {formatCount(sum((s) => s.unique[t] ?? 0))} /{' '}
                  {formatCount(sum((s) => s.shared[t] ?? 0))}
                </td>
              ))}
              <td data-testid="module-sign-conflicts">{formatCount(sum((s) => s.signConflicts))}</td>
            </tr>
          </tfoot>
        </table>
      </div>
    </>
  );
}

function OverlapCharts({ analysis, labels }: { analysis: AnalysisResult; labels: string[] }) {
  const totals = analysis.totals;
  const histogram = totals.counts.map((count, c) => ({ agents: String(c), elements: count }));
  const pairs = pairwiseOverlap(totals);
  const [low, high] = magnitudeRange(totals, analysis.epsilon);
  const magnitudeRows = [];
  for (let b = low; b <= high; b++) {
    const row: Record<string, string | number> = { bin: binLabel(b) };
    labels.forEach((label, t) => {
      row[label] = totals.magnitude[t]?.[b] ?? 0;
    });
    magnitudeRows.push(row);
  }
  const suspects = resaveSuspects(totals);
  return (
    <div className="studio-charts">
      <Chart title="Elements changed by exactly k agents" testId="chart-overlap">
        <BarChart data={histogram}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="agents" label={{ value: 'k agents', position: 'insideBottom', offset: -2 }} />
          <YAxis tickFormatter={countTooltip} width={64} />
          <Tooltip
            formatter={countTooltip}
            labelFormatter={(k) => `changed by exactly ${String(k)} agents`}
          />
          <Bar dataKey="elements" fill="#1f5fbf" isAnimationActive={false} />
        </BarChart>
      </Chart>
      <Chart title={`|τ| of changed elements (ε = ${analysis.epsilon} marked)`} testId="chart-magnitude">
        <BarChart data={magnitudeRows}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="bin" interval="preserveStartEnd" />
          <YAxis tickFormatter={countTooltip} width={64} />
          <Tooltip formatter={countTooltip} labelFormatter={(bin) => `|τ| in [${String(bin)}, ×2)`} />
          <Legend />
          <ReferenceLine
            x={binLabel(epsilonBin(analysis.epsilon))}
            stroke="#b3261e"
            strokeDasharray="4 2"
            label={{ value: 'ε', position: 'top', fill: '#b3261e' }}
          />
          {labels.map((label, t) => (
            <Bar key={label} dataKey={label} fill={agentColor(t)} isAnimationActive={false} />
          ))}
        </BarChart>
      </Chart>
      <figure className="card studio-chart" data-testid="pairwise">
        <figcaption>
          <h3>Pairwise overlap (elements changed by both)</h3>
        </figcaption>
        {pairs ? (
          <table className="studio-table studio-matrix">
            <thead>
              <tr>
                <td />
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
                    const value = pairs[a]?.[b] ?? 0;
                    const share = value / Math.max(1, totals.changed[a] ?? 0);
                    return (
                      <td
                        key={col}
                        data-testid={`pair-${idPart(row)}-${idPart(col)}`}
                        style={{ background: `rgba(31, 95, 191, ${(0.1 + 0.6 * share).toFixed(2)})` }}
                        title={`${formatCount(value)} = ${(100 * share).toFixed(1)}% of ${row}'s changes`}
                      >
                        {formatCount(value)}
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <p className="muted" data-testid="pairwise-unavailable">
            Pairs are counted for up to 8 agents; beyond that the statistics count, per agent, how many others
            changed the same element, not which ones.
          </p>
        )}
        {suspects.some(Boolean) && (
          <p className="notice notice--warn" data-testid="resave-warning">
            {labels.filter((_, t) => suspects[t]).join(', ')}: nearly every change is at most one ulp of the
            base value. That is what a dtype round trip or re-save looks like, not training; check these
            files.
          </p>
        )}
      </figure>
    </div>
  );
}

type SortKey = 'name' | 'numel' | 'conflicts' | number;

function TensorFilters({
  tensors,
  shown,
  filter,
  onFilter,
}: { tensors: TensorStats[]; shown: number } & DrillProps) {
  const id = useId();
  const layers = useMemo(
    () => layerStats(tensors, tensors[0]?.changed.length ?? 0).map((l) => l.layer),
    [tensors],
  );
  return (
    <div className="studio-filters" role="search" aria-label="Filter the tensor table">
      <div className="studio-field">
        <label htmlFor={`${id}-text`}>Tensor name contains</label>
        <input
          id={`${id}-text`}
          type="search"
          value={filter.text}
          placeholder="e.g. q_proj"
          data-testid="tensor-filter-text"
          onChange={(event) => onFilter({ ...filter, text: event.currentTarget.value })}
        />
      </div>
      <div className="studio-field">
        <label htmlFor={`${id}-layer`}>Layer</label>
        <select
          id={`${id}-layer`}
          value={filter.layer ?? ''}
          data-testid="tensor-filter-layer"
          onChange={(event) => onFilter({ ...filter, layer: event.currentTarget.value || null })}
        >
          <option value="">All layers</option>
          {layers.map((layer) => (
            <option key={layer} value={layer}>
              {layer}
            </option>
          ))}
        </select>
      </div>
      <div className="studio-field">
        <label htmlFor={`${id}-module`}>Module type</label>
        <select
          id={`${id}-module`}
          value={filter.module ?? ''}
          data-testid="tensor-filter-module"
          onChange={(event) =>
            onFilter({ ...filter, module: (event.currentTarget.value || null) as ModuleType | null })
          }
        >
          <option value="">All module types</option>
          {MODULE_TYPES.map((module) => (
            <option key={module} value={module}>
              {module}
            </option>
          ))}
        </select>
      </div>
      <p className="studio-filters__count" aria-live="polite" data-testid="tensor-filter-status">
        Showing <strong data-testid="tensor-filter-shown">{formatCount(shown)}</strong> of{' '}
        <strong data-testid="tensor-filter-total">{formatCount(tensors.length)}</strong> tensors
        {isFiltered(filter) && (
          <>
            {' · '}
            <button
              type="button"
              className="studio-drill"
              data-testid="tensor-filter-clear"
              onClick={() => onFilter(NO_FILTER)}
            >
              clear
            </button>
          </>
        )}
      </p>
    </div>
  );
}

function TensorTable({ tensors, labels }: { tensors: TensorStats[]; labels: string[] }) {
  const [sort, setSort] = useState<{ key: SortKey; descending: boolean }>({ key: 'name', descending: false });
  const value = (t: TensorStats, key: SortKey): number | string =>
    key === 'name'
      ? t.name
      : key === 'numel'
        ? t.numel
        : key === 'conflicts'
          ? t.signConflicts
          : (t.changed[key] ?? 0) / Math.max(1, t.numel);
  const rows = [...tensors].sort((a, b) => {
    const x = value(a, sort.key);
    const y = value(b, sort.key);
    const order = x < y ? -1 : x > y ? 1 : 0;
    return sort.descending ? -order : order;
  });
  const header = (key: SortKey, text: string) => {
    const active = sort.key === key;
    return (
      <th scope="col" aria-sort={active ? (sort.descending ? 'descending' : 'ascending') : 'none'}>
        <button
          type="button"
          className="studio-sort"
          data-testid={`tensor-sort-${typeof key === 'number' ? `agent-${key}` : key}`}
          onClick={() => setSort({ key, descending: active ? !sort.descending : key !== 'name' })}
        >
          {text}
          {active ? (sort.descending ? ' ▼' : ' ▲') : ''}
        </button>
      </th>
    );
  };
  return (
    <div className="studio-scroll studio-scroll--tall">
      <table className="studio-table" data-testid="tensor-table">
        <caption>Per tensor: changed (unique) per agent</caption>
        <thead>
          <tr>
            {header('name', 'Tensor')}
            {header('numel', 'Elements')}
            {labels.map((label, t) => (
              <Fragment key={label}>{header(t, `${label} %`)}</Fragment>
            ))}
            {header('conflicts', 'Sign conflicts')}
          </tr>
        </thead>
        <tbody>
          {rows.map((t) => (
            <tr key={t.name} data-testid="tensor-row" data-name={t.name} data-layer={layerOf(t.name)}>
              <th scope="row">
                <code>{t.name}</code>
              </th>
              <td>{formatCount(t.numel)}</td>
              {labels.map((label, a) => (
                <td key={label}>
                  {percent(t.changed[a] ?? 0, t.numel)}% ({formatCount(t.unique[a] ?? 0)})
                </td>
              ))}
              <td>{formatCount(t.signConflicts)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The charts and tables below the totals; they share the tensor table's filter for drill-downs. */
function AnalysisViews({ analysis, labels }: { analysis: AnalysisResult; labels: string[] }) {
  const [filter, setFilter] = useState<TensorFilter>(NO_FILTER);
  const shown = useMemo(() => filterTensors(analysis.tensors, filter), [analysis, filter]);
  return (
    <>
      <LayerCharts analysis={analysis} labels={labels} filter={filter} onFilter={setFilter} />
      <ModuleViews analysis={analysis} labels={labels} filter={filter} onFilter={setFilter} />
      <OverlapCharts analysis={analysis} labels={labels} />
      <TensorFilters tensors={analysis.tensors} shown={shown.length} filter={filter} onFilter={setFilter} />
      <TensorTable tensors={shown} labels={labels} />
    </>
  );
}

export function StatsPanel() {
  const analysis = useStudio((s) => s.studio.analysis);
  const labels = useStudio((s) => s.studio.analysisLabels);
  const result = analysis.result;
  return (
    <section
      className="panel"
      aria-labelledby="stats-heading"
      data-testid="stats-panel"
      data-status={analysis.status}
      aria-busy={analysis.status === 'running'}
    >
      <div className="panel__head">
        <h2 id="stats-heading">2. Where the agents changed the base</h2>
        {analysis.status === 'running' ? (
          <button
            type="button"
            className="button button--secondary"
            data-testid="stats-cancel"
            onClick={() => studioStore.getState().cancelAnalysis()}
          >
            Cancel
          </button>
        ) : (
          <button
            type="button"
            className="button button--secondary"
            data-testid="stats-run"
            onClick={() => void studioStore.getState().runAnalysis()}
          >
            Run statistics
          </button>
        )}
      </div>
      {analysis.status === 'running' && (
        <ProgressBar progress={analysis.progress} testId="stats-progress" label="Statistics progress" />
      )}
      {analysis.status === 'cancelled' && (
        <p data-testid="stats-cancelled">The statistics pass was cancelled.</p>
      )}
      {analysis.error && <ErrorBox error={analysis.error} testId="stats-error" />}
      {analysis.status === 'idle' && (
        <p className="muted">Statistics appear once the models are loaded and match.</p>
      )}
      {result && (
        <>
          <p className="muted">
            An element counts as changed by an agent when |θ_agent − θ_base| &gt; ε = {result.epsilon}. Counts
            are exact integers; percentages are computed from them.
          </p>
          <TotalsTable totals={result.totals} labels={labels} />
          <AnalysisViews analysis={result} labels={labels} />
        </>
      )}
    </section>
  );
}

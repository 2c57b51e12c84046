// Per module: the charts by projection-level module (q, k, v, o, gate, up, down, norms, …, from
// names.ts), and the table by module family (attention, MLP, embeddings, norms, head, other), whose
// Σ row equals the totals. A bar selects its module's tensors; a family button filters by family.
import { useMemo, useRef } from 'react';
import type { ModelStats } from '../../../methods/stats.ts';
import { formatCount } from '../../format.ts';
import { idPart } from '../common.tsx';
import { moduleStats, type Atlas } from '../summary.ts';
import { sumStats } from '../../../methods/stats.ts';
import { ChangeCharts, type Group } from './ChangeCharts.tsx';
import { ExportButtons } from './ExportButtons.tsx';
import type { AnalysisProps, DrillProps } from './types.ts';

/** One group per atlas column, summed over its cells (integers first). */
function moduleGroups(atlas: Atlas, analysis: AnalysisProps['analysis'], agents: number): Group[] {
  return atlas.modules.map((module) => {
    const names = new Set(
      [...atlas.cells.values()].filter((c) => c.module === module).flatMap((c) => c.tensors),
    );
    return {
      key: module,
      label: module,
      stats: sumStats(
        analysis.tensors.filter((t) => names.has(t.name)),
        agents,
      ),
    };
  });
}

export function ModuleViews({
  analysis,
  labels,
  atlas,
  filter,
  onFilter,
}: AnalysisProps & DrillProps & { atlas: Atlas }) {
  const families = useMemo(() => moduleStats(analysis.tensors, labels.length), [analysis, labels.length]);
  const groups = useMemo(
    () => moduleGroups(atlas, analysis, labels.length),
    [atlas, analysis, labels.length],
  );
  const selectModule = (module: string): void => {
    const names = [...atlas.cells.values()].filter((c) => c.module === module).flatMap((c) => c.tensors);
    onFilter({ ...filter, names, layer: null, module: null });
  };
  const sum = (pick: (s: ModelStats) => number): number => families.reduce((a, m) => a + pick(m.stats), 0);
  const box = useRef<HTMLDivElement>(null);
  return (
    <>
      <div className="studio-charts">
        <ChangeCharts
          noun="module"
          testIds={['chart-module-changed', 'chart-module-split']}
          groups={groups}
          labels={labels}
          angled
          onSelect={selectModule}
        />
      </div>
      <div className="studio-scroll studio-pinned" ref={box}>
        <table className="studio-table" data-testid="module-table">
          <caption>
            Per module family, from the tensor names (attention, MLP, embeddings, norms, head, other); the
            last row sums them and equals the totals above. Choose a family to list its tensors below.{' '}
            <ExportButtons target={box} name="statistics-per-module-family" csv />
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
            {families.map(({ module, tensors, stats }) => (
              <tr key={module} data-testid={`module-row-${module}`}>
                <th scope="row">
                  <button
                    type="button"
                    className="studio-drill"
                    data-testid={`module-filter-${module}`}
                    aria-pressed={filter.module === module}
                    aria-label={`Show the ${module} tensors`}
                    onClick={() =>
                      onFilter({ ...filter, names: null, module: filter.module === module ? null : module })
                    }
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

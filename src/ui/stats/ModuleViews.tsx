// Per module: the charts by projection-level module (q, k, v, o, gate, up, down, norms, …, from
// names.ts), and the table by module family (attention, MLP, embeddings, norms, head, other), whose
// Σ row equals the totals. A bar selects its module's tensors; a family button filters by family.
import { useMemo } from 'react';
import { moduleStats, type Atlas } from './summary.ts';
import { sumStats } from '../../methods/stats.ts';
import { ChangeCharts, type Group } from './ChangeCharts.tsx';
import { GroupTable } from './GroupTable.tsx';
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
      <GroupTable
        prefix="module"
        testId="module-table"
        caption="Per module family, from the tensor names (attention, MLP, embeddings, norms, head, other); the last row sums them and equals the totals above. Choose a family to list its tensors below."
        exportName="statistics-per-module-family"
        head="Module type"
        sumLabel="Σ module types"
        labels={labels}
        withShared
        rows={families.map(({ module, tensors, stats }) => ({
          key: module,
          id: module,
          label: module,
          tensors,
          stats,
          drillLabel: `Show the ${module} tensors`,
          pressed: filter.module === module,
          onDrill: () =>
            onFilter({ ...filter, names: null, module: filter.module === module ? null : module }),
        }))}
      />
    </>
  );
}

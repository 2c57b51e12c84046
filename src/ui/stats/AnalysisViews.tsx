// The statistics views under the totals, sharing the tensor table's filter for drill-downs.
import { useEffect, useMemo, useRef, useState } from 'react';
import { atlasOf, filterTensors, NO_FILTER, type TensorFilter } from './summary.ts';
import { AtlasView } from './Atlas.tsx';
import { LayerViews } from './LayerViews.tsx';
import { ModuleViews } from './ModuleViews.tsx';
import { OverlapViews } from './OverlapViews.tsx';
import { TensorFilters } from './TensorFilters.tsx';
import { TensorTable } from './TensorTable.tsx';
import type { AnalysisProps } from './types.ts';

export function AnalysisViews({ analysis, labels }: AnalysisProps) {
  const [filter, setFilter] = useState<TensorFilter>(NO_FILTER);
  const shown = useMemo(() => filterTensors(analysis.tensors, filter), [analysis, filter]);
  const atlas = useMemo(() => atlasOf(analysis.tensors, labels.length), [analysis, labels.length]);
  // An atlas cell's click lists its tensors far below the atlas: the page goes there once they are drawn.
  const [reveal, setReveal] = useState(0);
  const tensorsRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (reveal > 0) tensorsRef.current?.scrollIntoView({ block: 'start' });
  }, [reveal]);
  return (
    <>
      <section data-report="" aria-label="Atlas">
        <AtlasView
          atlas={atlas}
          labels={labels}
          filter={filter}
          onFilter={(next) => {
            setFilter(next);
            if (next.names !== null) setReveal((n) => n + 1);
          }}
        />
      </section>
      <section data-report="" aria-label="Per layer">
        <LayerViews analysis={analysis} labels={labels} filter={filter} onFilter={setFilter} />
      </section>
      <section data-report="" aria-label="Per module">
        <ModuleViews analysis={analysis} labels={labels} atlas={atlas} filter={filter} onFilter={setFilter} />
      </section>
      <section data-report="" aria-label="Overlap">
        <OverlapViews analysis={analysis} labels={labels} />
      </section>
      <div ref={tensorsRef} className="studio-tensors" data-testid="tensor-list">
        <TensorFilters tensors={analysis.tensors} shown={shown.length} filter={filter} onFilter={setFilter} />
        <TensorTable tensors={shown} labels={labels} />
      </div>
    </>
  );
}

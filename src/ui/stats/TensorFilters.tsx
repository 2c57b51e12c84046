// The tensor table's filter row: name text, layer, module family, and an atlas cell's selection.
import { useId, useMemo } from 'react';
import type { TensorStats } from '../../methods/tensors.ts';
import { formatCount } from '../format.ts';
import { isFiltered, MODULE_TYPES, NO_FILTER, orderLayers, type ModuleType } from './summary.ts';
import type { DrillProps } from './types.ts';

export function TensorFilters({
  tensors,
  shown,
  filter,
  onFilter,
}: { tensors: TensorStats[]; shown: number } & DrillProps) {
  const id = useId();
  const layers = useMemo(() => orderLayers(tensors), [tensors]);
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
        {filter.names !== null && (
          <>
            <span data-testid="tensor-filter-cell"> of the chosen cell or module</span>
            {' · '}
            <button
              type="button"
              className="studio-drill"
              data-testid="tensor-filter-atlas"
              onClick={() =>
                document.querySelector('[data-testid="atlas"]')?.scrollIntoView({ block: 'start' })
              }
            >
              back to the atlas
            </button>
          </>
        )}
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

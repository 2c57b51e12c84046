// The sortable per-tensor table (changed % and unique count per agent), its first column pinned;
// each row opens its tensor in the tensor view.
import { Fragment, useRef, useState } from 'react';
import type { TensorStats } from '../../methods/tensors.ts';
import { studioStore } from '../../state/store.ts';
import { formatCount } from '../format.ts';
import { layerOf, percent } from './summary.ts';
import { ExportButtons } from './ExportButtons.tsx';

/** Opens a tensor in the tensor view below the statistics and brings the view into sight. */
function showInTensorView(name: string): void {
  void studioStore.getState().inspectTensor(name);
  document.querySelector('[data-testid="inspect-panel"]')?.scrollIntoView({ block: 'start' });
}

type SortKey = 'name' | 'numel' | 'conflicts' | number;

export function TensorTable({ tensors, labels }: { tensors: TensorStats[]; labels: string[] }) {
  const [sort, setSort] = useState<{ key: SortKey; descending: boolean }>({ key: 'name', descending: false });
  const box = useRef<HTMLDivElement>(null);
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
    <div className="studio-scroll studio-scroll--tall studio-pinned" ref={box}>
      <table className="studio-table studio-table--tensors" data-testid="tensor-table">
        <caption>
          Per tensor: changed (unique) per agent{' '}
          <ExportButtons target={box} name="statistics-per-tensor" csv />
        </caption>
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
                <code className="studio-tensor-name">
                  {t.name.split('.').map((part, i) => (
                    // A long name breaks after its dots, so the agents' columns fit at 1280 px.
                    <Fragment key={i}>
                      {i > 0 && (
                        <>
                          .<wbr />
                        </>
                      )}
                      {part}
                    </Fragment>
                  ))}
                </code>{' '}
                <button
                  type="button"
                  className="button button--small button--ghost"
                  data-testid="tensor-inspect"
                  aria-label={`Show ${t.name} in the tensor view`}
                  onClick={() => showInTensorView(t.name)}
                >
                  view
                </button>
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

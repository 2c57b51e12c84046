// The per-group table both the layer and the module views show: a row per group with its drill-down
// button, tensors, elements, each agent's counts and the sign conflicts, and a Σ row that sums them
// (and so equals the totals above).
import { useRef, type ReactNode } from 'react';
import type { ModelStats } from '../../methods/stats.ts';
import { formatCount } from '../format.ts';
import { idPart } from '../studio/common.tsx';
import { ExportButtons } from './ExportButtons.tsx';

export interface GroupRow {
  key: string;
  /** The part of the row's test ids that names it. */
  id: string;
  label: ReactNode;
  tensors: number;
  stats: ModelStats;
  /** Says what the drill-down button shows, for screen readers. */
  drillLabel: string;
  pressed: boolean;
  onDrill(): void;
}

export function GroupTable({
  prefix,
  testId,
  caption,
  exportName,
  head,
  sumLabel,
  rows,
  labels,
  withShared = false,
  tall = false,
}: {
  /** Test ids of rows and cells start with it: `${prefix}-row-…`, `${prefix}-numel`, … */
  prefix: string;
  testId: string;
  caption: ReactNode;
  exportName: string;
  head: string;
  sumLabel: string;
  rows: GroupRow[];
  labels: string[];
  /** Each agent's shared count after changed / unique. */
  withShared?: boolean;
  tall?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const sum = (pick: (s: ModelStats) => number): number => rows.reduce((a, r) => a + pick(r.stats), 0);
  const agentCells = (value: (pick: (s: ModelStats) => number) => number) =>
    labels.map((label, t) => (
      <td key={label} data-testid={`${prefix}-agent-${idPart(label)}`}>
        {formatCount(value((s) => s.changed[t] ?? 0))} / {formatCount(value((s) => s.unique[t] ?? 0))}
        {withShared && <> / {formatCount(value((s) => s.shared[t] ?? 0))}</>}
      </td>
    ));
  return (
    <div className={`studio-scroll${tall ? ' studio-scroll--tall' : ''} studio-pinned`} ref={box}>
      <table className="studio-table" data-testid={testId}>
        <caption>
          {caption} <ExportButtons target={box} name={exportName} csv />
        </caption>
        <thead>
          <tr>
            <th scope="col">{head}</th>
            <th scope="col">Tensors</th>
            <th scope="col">Elements</th>
            {labels.map((label) => (
              <th key={label} scope="col">
                {label}: changed / unique{withShared ? ' / shared' : ''}
              </th>
            ))}
            <th scope="col">Sign conflicts</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.key} data-testid={`${prefix}-row-${row.id}`}>
              <th scope="row">
                <button
                  type="button"
                  className="studio-drill"
                  data-testid={`${prefix}-filter-${row.id}`}
                  aria-pressed={row.pressed}
                  aria-label={row.drillLabel}
                  onClick={row.onDrill}
                >
                  {row.label}
                </button>
              </th>
              <td>{formatCount(row.tensors)}</td>
              <td data-testid={`${prefix}-numel`}>{formatCount(row.stats.numel)}</td>
              {agentCells((pick) => pick(row.stats))}
              <td>{formatCount(row.stats.signConflicts)}</td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr data-testid={`${prefix}-row-sum`}>
            <th scope="row">{sumLabel}</th>
            <td>{formatCount(sum((s) => s.tensors))}</td>
            <td data-testid={`${prefix}-numel`}>{formatCount(sum((s) => s.numel))}</td>
            {agentCells(sum)}
            <td data-testid={`${prefix}-sign-conflicts`}>{formatCount(sum((s) => s.signConflicts))}</td>
          </tr>
        </tfoot>
      </table>
    </div>
  );
}

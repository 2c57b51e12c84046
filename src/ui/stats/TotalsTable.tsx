// Per agent: changed, unique, shared and ρ over the whole model, and the k-counts under them.
import { useRef } from 'react';
import type { ModelStats } from '../../methods/stats.ts';
import { formatCount } from '../format.ts';
import { agentColor } from '../studio/colors.ts';
import { idPart } from '../studio/common.tsx';
import { percent, sharedElements } from './summary.ts';
import { ExportButtons } from './ExportButtons.tsx';

export function TotalsTable({ totals, labels }: { totals: ModelStats; labels: string[] }) {
  const box = useRef<HTMLDivElement>(null);
  return (
    <div className="studio-scroll studio-pinned" ref={box} data-testid="stats-totals-box">
      <table className="studio-table" data-testid="stats-totals">
        <caption>
          Totals per agent <ExportButtons target={box} name="statistics-totals" csv />
        </caption>
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
                <th scope="row">
                  <span className="studio-swatch" style={{ background: agentColor(t) }} aria-hidden="true" />
                  {label}
                </th>
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

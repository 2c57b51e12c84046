// Step 1's verdict once the models are read: whether they match tensor for tensor (the differences
// grouped by kind), and the engine and memory card beside it.
import { useMemo } from 'react';
import { useStudio } from '../../state/store.ts';
import { formatCount } from '../format.ts';
import { issueAt, ISSUE_KINDS, type CompatIssue, type IssueColumns } from '../../format/compat.ts';
import { ErrorBox } from '../studio/common.tsx';
import { EngineCard } from './EngineCard.tsx';
import { VirtualTable, type VirtualColumn } from './VirtualTable.tsx';

const KIND_TEXT: Record<CompatIssue['kind'], string> = {
  missing: 'missing from an agent',
  extra: 'only in an agent',
  shape: 'different shape',
  dtype: 'different dtype',
};

/** The differences grouped by kind with counts, each group collapsed, its rows virtualised (built when shown). */
function CompatIssues({ issues }: { issues: IssueColumns }) {
  const groups = useMemo(() => {
    const byKind = new Map<CompatIssue['kind'], number[]>();
    for (let i = 0; i < issues.count; i++) {
      const kind = ISSUE_KINDS[issues.kinds[i] ?? 0] ?? 'missing';
      const group = byKind.get(kind);
      if (group) group.push(i);
      else byKind.set(kind, [i]);
    }
    return [...byKind];
  }, [issues]);
  const columns = useMemo<VirtualColumn<number>[]>(
    () => [
      { header: 'Model', cell: (i) => issueAt(issues, i).model },
      { header: 'Tensor', cell: (i) => <code>{issueAt(issues, i).tensor}</code> },
      { header: 'Detail', cell: (i) => issueAt(issues, i).detail },
    ],
    [issues],
  );
  return (
    <div className="studio-compat-groups" data-testid="compat-issues">
      {groups.map(([kind, list]) => (
        <details
          key={kind}
          className="studio-compat-group"
          data-testid={`compat-group-${kind}`}
          data-count={list.length}
        >
          <summary>
            <strong>{formatCount(list.length)}</strong> {KIND_TEXT[kind]}{' '}
            <span className="muted">({kind})</span>
          </summary>
          <VirtualTable
            rows={list}
            columns={columns}
            rowKey={(i) => String(i)}
            caption={`${KIND_TEXT[kind]}: ${list.length} tensors`}
            rowTestId="compat-issue"
          />
        </details>
      ))}
    </div>
  );
}

export function CompatReportView() {
  const check = useStudio((s) => s.studio.check);
  if (check.status === 'idle') return null;
  if (check.status === 'running') return <p className="muted">Checking that the models match…</p>;
  if (check.error) return <ErrorBox error={check.error} testId="compat-error" />;
  const report = check.result;
  if (!report) return null;
  const { compat, engine, memory } = report;
  return (
    <div className="cards">
      <article className="card card--wide" data-testid="compat-report" data-ok={String(compat.ok)}>
        <h3>Compatibility</h3>
        {compat.ok ? (
          <p className="status status--ready" data-testid="compat-ok">
            All {formatCount(compat.common.length)} tensors match in name, shape and dtype.
          </p>
        ) : (
          <>
            <p className="status status--error" role="alert" data-testid="compat-issues-count">
              {compat.issues.count} difference{compat.issues.count === 1 ? '' : 's'}: these models cannot be
              merged as they are.
            </p>
            <CompatIssues issues={compat.issues} />
          </>
        )}
        {compat.notes.length > 0 && (
          <ul>
            {compat.notes.map((n) => (
              <li key={n}>{n}</li>
            ))}
          </ul>
        )}
      </article>
      <EngineCard engine={engine} memory={memory} />
    </div>
  );
}

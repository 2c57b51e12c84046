// One label/value row of a definition list; an empty value reads "Not reported".
import type { ReactNode } from 'react';

export function Fact({ label, testId, value }: { label: string; testId: string; value: ReactNode }) {
  const empty = value === '' || value === null;
  return (
    <div className="facts__row">
      <dt>{label}</dt>
      <dd data-testid={testId} className={empty ? 'muted' : undefined}>
        {empty ? 'Not reported' : value}
      </dd>
    </div>
  );
}

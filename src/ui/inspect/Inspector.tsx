// Explain one element: the engine merges the chosen tensor with the current recipe in the worker and
// reports the element's stored values, τ, which agents count as changed at ε, λ and the merged value
// in the output dtype; the result's data-json is the shape the issue fixes for tests and scripts.
import { useStudio } from '../../state/store.ts';
import { ErrorBox } from '../studio/common.tsx';

/** Exactly the decoded value: JavaScript's shortest round-tripping form of the double. */
const exact = (value: number): string => String(value);

export function Inspector() {
  const explain = useStudio((s) => s.inspect.explain);
  const labels = useStudio((s) => s.studio.analysisLabels);
  const epsilon = useStudio((s) => s.studio.params.epsilon);
  const r = explain.result;
  return (
    <div className="inspect-explain" data-testid="inspector" data-status={explain.status}>
      {explain.status === 'running' && <p className="muted">Merging the tensor in the engine…</p>}
      {explain.error && <ErrorBox error={explain.error} testId="inspector-error" />}
      {r && (
        <div
          data-testid="inspector-result"
          data-json={JSON.stringify({
            tensor: r.tensor,
            index: r.index,
            method: r.method,
            base: r.base,
            agents: r.agents.map((a) => ({ value: a.value, tau: a.tau, changed: a.changed })),
            contributors: r.contributors,
            lambda: r.lambda,
            merged: r.merged,
          })}
        >
          <div className="studio-scroll">
            <table className="studio-table studio-table--compact">
              <caption>
                Element {r.index} of <code>{r.tensor}</code>, method {r.method}, ε = {epsilon}
              </caption>
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  <th scope="col">Stored value</th>
                  <th scope="col">τ = θ − θ₀ (f32)</th>
                  <th scope="col">Changed (|τ| &gt; ε)</th>
                  <th scope="col">λ</th>
                </tr>
              </thead>
              <tbody>
                <tr>
                  <th scope="row">base</th>
                  <td>{exact(r.base)}</td>
                  <td>—</td>
                  <td>—</td>
                  <td>—</td>
                </tr>
                {r.agents.map((a, t) => (
                  <tr key={t} data-testid="inspector-agent">
                    <th scope="row">{labels[t] ?? `agent ${t + 1}`}</th>
                    <td>{exact(a.value)}</td>
                    <td>{exact(a.tau)}</td>
                    <td>{a.changed ? 'yes' : 'no'}</td>
                    <td>{exact(r.lambda[t] ?? 1)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p data-testid="inspector-merged">
            {r.contributors} contributing agent{r.contributors === 1 ? '' : 's'}; merged value written as{' '}
            {r.outDtype}: <strong>{exact(r.merged)}</strong> (base {exact(r.base)}, change{' '}
            {exact(r.merged - r.base)})
          </p>
        </div>
      )}
    </div>
  );
}

// Where the statistics found NaN or ±Inf that the models do not share (SPEC.md "Non-finite values"):
// such elements are not classified, and a merge of their tensors stops, so the studio lists them per
// tensor and per model before anyone starts one.
import { useStudio } from '../../state/store.ts';
import { formatCount } from '../format.ts';
import { idPart } from '../studio/common.tsx';

/** Tensors listed at most; the total above the table counts them all. */
const MAX_ROWS = 50;

export function NonFinite() {
  const result = useStudio((s) => s.studio.analysis.result);
  const labels = useStudio((s) => s.studio.analysisLabels);
  if (!result) return null;
  const { totals } = result;
  if (totals.nonFinite === 0) {
    return (
      <p className="muted" data-testid="nonfinite-none">
        No NaN or ±Inf where the models differ.
      </p>
    );
  }
  const models = ['base', ...labels];
  const tensors = result.tensors.filter((t) => t.nonFinite > 0).sort((a, b) => b.nonFinite - a.nonFinite);
  return (
    <section
      className="notice notice--warn"
      aria-labelledby="nonfinite-heading"
      data-testid="nonfinite-panel"
    >
      <h3 id="nonfinite-heading">NaN or ±Inf where the models differ</h3>
      <p data-testid="nonfinite-total">
        {formatCount(totals.nonFinite)} elements in {formatCount(tensors.length)} tensors hold NaN or ±Inf in
        some model but not in all. They are left out of the counts above, and merging these tensors stops with
        an error: fix or replace the model that holds them.
      </p>
      <table className="studio-table">
        <thead>
          <tr>
            <th scope="col">tensor</th>
            <th scope="col">elements</th>
            {models.map((label) => (
              <th scope="col" key={label}>
                in {label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {tensors.slice(0, MAX_ROWS).map((t) => (
            <tr key={t.name} data-testid={`nonfinite-row-${idPart(t.name)}`}>
              <td>
                <code>{t.name}</code>
              </td>
              <td>{formatCount(t.nonFinite)}</td>
              {models.map((label, m) => (
                <td key={label}>{formatCount(t.nonFiniteModels[m] ?? 0)}</td>
              ))}
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row">all tensors</th>
            <td>{formatCount(totals.nonFinite)}</td>
            {models.map((label, m) => (
              <td key={label} data-testid={`nonfinite-model-${m}`}>
                {formatCount(totals.nonFiniteModels[m] ?? 0)}
              </td>
            ))}
          </tr>
        </tfoot>
      </table>
    </section>
  );
}

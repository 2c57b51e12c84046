// An evaluation's outcome: per probe set and model the mean NLL per token and the top-1 rate; on a set
// named after an agent, every other model's retention of that agent (colour and words); under each
// candidate merge, "Write this merge"; the greedy continuations per probe; and the result as the CLI's
// JSON (data-json), for tests and for keeping.
import { useEffect, useMemo } from 'react';
import { useStudio } from '../../state/store.ts';
import type { EvalCandidate } from '../../state/studio-slice.ts';
import type { EvalResult } from '../../worker/protocol.ts';
import { idPart } from '../studio/common.tsx';
import { WriteCandidate } from './CandidateMerges.tsx';
import { retentionLevel, retentionOf, type Retention } from './retention.ts';

const percent = (x: number): string => `${(100 * x).toFixed(1)}%`;
const signed = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(3)}`;

const LEVEL_TEXT = { kept: 'kept', partial: 'partly kept', lost: 'lost', none: '' } as const;

function RetentionLine({ cell }: { cell: Retention }) {
  const level = retentionLevel(cell.retention);
  return (
    <span className="eval-retention" data-testid="eval-retention">
      {cell.retention === null ? 'retention —' : `retains ${percent(cell.retention)} (${LEVEL_TEXT[level]})`},
      ΔNLL {signed(cell.dNll)}
    </span>
  );
}

export function EvalResults({ result, scored }: { result: EvalResult; scored: readonly EvalCandidate[] }) {
  const agents = result.models.map((_, i) => scored[i]?.kind === 'agent');
  const writable = useStudio((s) => s.studio.evaluation.candidateMerges);
  const retention = retentionOf(result, agents);
  const json = JSON.stringify(result);
  const download = useMemo(() => URL.createObjectURL(new Blob([json], { type: 'application/json' })), [json]);
  useEffect(() => () => URL.revokeObjectURL(download), [download]);
  return (
    <div className="eval-results" data-testid="eval-result" data-json={json}>
      <div className="studio-scroll">
        <table className="studio-table eval-table" data-testid="eval-table">
          <caption>
            Mean NLL per completion token (nats, lower is better) and top-1 rate, per probe set and model. On
            a set named after an agent, the others&apos; top-1 rate as a share of the agent&apos;s, and their
            NLL above it.
          </caption>
          <thead>
            <tr>
              <th scope="col">Set (tokens)</th>
              {result.models.map((m, i) => (
                <th key={i} scope="col" data-testid={`eval-model-head-${i}`}>
                  {m.label}
                  {scored[i] && scored[i].kind !== m.label && (
                    <span className="muted eval-kind"> {scored[i].kind}</span>
                  )}
                  {scored[i]?.kind === 'candidate' && writable.some((c) => c.label === m.label) && (
                    <WriteCandidate label={m.label} />
                  )}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {result.sets.map((set, s) => {
              const own = retention[s];
              return (
                <tr key={set.set} data-testid={`eval-set-${idPart(set.set)}`}>
                  <th scope="row">
                    {set.set} <span className="muted">({set.tokens})</span>
                  </th>
                  {result.models.map((_, m) => {
                    const cell = own?.cells[m] ?? null;
                    const level = cell ? retentionLevel(cell.retention) : 'none';
                    return (
                      <td
                        key={m}
                        className={`eval-cell eval-cell--${own?.agent === m ? 'own' : level}`}
                        data-testid={`eval-cell-${idPart(set.set)}-${m}`}
                        data-level={own?.agent === m ? 'own' : level}
                      >
                        <span data-testid="eval-nll">NLL {(set.meanNll[m] ?? NaN).toFixed(3)}</span>
                        <span data-testid="eval-top1">top-1 {percent(set.top1Rate[m] ?? NaN)}</span>
                        {own?.agent === m && <span className="eval-retention">the set&apos;s agent</span>}
                        {cell && <RetentionLine cell={cell} />}
                      </td>
                    );
                  })}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <details className="eval-examples">
        <summary>Greedy continuations of each probe&apos;s prompt ({result.examples.length} probes)</summary>
        <div className="studio-scroll studio-scroll--tall">
          <table className="studio-table studio-table--compact" data-testid="eval-examples">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Set</th>
                {result.models.map((m, i) => (
                  <th key={i} scope="col">
                    {m.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {result.examples.map((example, e) => (
                <tr key={e}>
                  <th scope="row">{e + 1}</th>
                  <td>{example.set}</td>
                  {result.models.map((_, m) => (
                    <td key={m}>
                      <pre className="eval-text">{example.generatedText[m] ?? ''}</pre>
                      <span className="muted">
                        NLL {(example.nll[m] ?? NaN).toFixed(3)}, top-1 {example.top1[m] ?? 0}/
                        {example.completionTokens}
                      </span>
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
      <p>
        <a
          className="button button--secondary"
          href={download}
          download="eval.json"
          data-testid="eval-download"
        >
          Download the JSON
        </a>
      </p>
    </div>
  );
}

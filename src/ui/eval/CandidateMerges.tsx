// Candidate merges in the Evaluate step: a method and the parameters it reads (each spec's label and
// range, the method's defaults), added under the name the CLI's `--candidate` gives the same merge and
// scored by the next run beside the models, none written; and what "Write this merge" started.
import { useId, useState } from 'react';
import { defaultParams, validateParams } from '../../methods/defaults.ts';
import { METHOD_LIST } from '../../methods/registry/index.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import { candidateLabel } from '../../state/studio/candidates.ts';
import { fitParams } from '../../state/studio/recipe-slice.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { idPart } from '../studio/common.tsx';
import { ParamFields, type ParamChange } from '../merge/ParamFields.tsx';

/** The form that adds a candidate merge, and the candidates the next run scores. */
export function CandidateMerges() {
  const id = useId();
  const models = useStudio((s) => s.studio.models);
  const candidates = useStudio((s) => s.studio.evaluation.candidateMerges);
  const agents = models.filter((m) => m.role === 'agent').map((m) => m.label);
  const [draft, setDraft] = useState<MethodParams>(() => defaultParams('ramplus', agents.length));
  const [refused, setRefused] = useState<string | null>(null);
  // Sized to the agents loaded now: a list made for fewer agents is filled with the method's defaults.
  const params = fitParams(draft, agents.length);
  const problems = agents.length > 0 ? validateParams(params, agents.length) : [];
  const change: ParamChange = (key, value) => {
    setRefused(null);
    setDraft({ ...params, [key]: value });
  };
  return (
    <fieldset className="studio-field eval-cand" data-testid="eval-candidates">
      <legend>Candidate merges (scored without being written)</legend>
      <p className="muted" id={`${id}-help`}>
        Each is merged layer by layer as it is read, with the engine, parameters and dtypes the Merge step
        would write it with; RAM+ takes its λ from the statistics. Its name is the CLI&apos;s{' '}
        <code>--candidate</code> for the same merge.
      </p>
      <div className="studio-recipe">
        <div className="studio-field">
          <label htmlFor={`${id}-method`}>Method</label>
          <select
            id={`${id}-method`}
            value={params.method}
            data-testid="eval-cand-method"
            onChange={(event) => {
              setRefused(null);
              setDraft(defaultParams(event.currentTarget.value as MethodName, agents.length));
            }}
          >
            {METHOD_LIST.map((m) => (
              <option key={m.name} value={m.name}>
                {m.label}
              </option>
            ))}
          </select>
        </div>
        <ParamFields
          params={params}
          agents={agents}
          onChange={change}
          testIdPrefix="eval-cand"
          variant="compact"
        />
      </div>
      <div className="studio-actions">
        <button
          type="button"
          className="button button--secondary"
          data-testid="eval-cand-add"
          aria-describedby={`${id}-help`}
          disabled={agents.length === 0 || problems.length > 0}
          onClick={() => setRefused(studioStore.getState().addCandidateMerge(params))}
        >
          Add{' '}
          {agents.length > 0 && problems.length === 0 ? candidateLabel(params, agents.length) : 'candidate'}
        </button>
      </div>
      {(refused ?? problems[0]) && (
        <p className="notice notice--error" role="alert" data-testid="eval-cand-problem">
          {refused ?? problems.join('; ')}
        </p>
      )}
      {candidates.length > 0 && (
        <ul className="eval-files" data-testid="eval-cand-list">
          {candidates.map((c) => (
            <li key={c.label} data-testid={`eval-cand-${idPart(c.label)}`}>
              <code>{c.label}</code>{' '}
              <button
                type="button"
                className="button button--ghost"
                aria-label={`Remove candidate ${c.label}`}
                onClick={() => studioStore.getState().removeCandidateMerge(c.label)}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
    </fieldset>
  );
}

/** "Write this merge" of a scored candidate: the Merge step's recipe becomes its, and that merge runs. */
export function WriteCandidate({ label }: { label: string }) {
  const running = useStudio((s) => s.studio.merge.status === 'running');
  return (
    <button
      type="button"
      className="button button--secondary eval-write"
      data-testid={`eval-write-${idPart(label)}`}
      aria-label={`Write this merge: ${label}`}
      disabled={running}
      onClick={() => void studioStore.getState().writeCandidateMerge(label)}
    >
      Write this merge
    </button>
  );
}

/** What the last "Write this merge" started, while the Merge step's recipe is still that candidate's. */
export function WrittenCandidate() {
  const written = useStudio((s) => s.studio.evaluation.writtenCandidate);
  const params = useStudio((s) => s.studio.params);
  const merge = useStudio((s) => s.studio.merge);
  const agents = useStudio((s) => s.studio.models.filter((m) => m.role === 'agent').length);
  if (!written || candidateLabel(params, agents) !== written || merge.status === 'idle') return null;
  const said =
    merge.status === 'running'
      ? `Writing ${written} with the Merge step`
      : merge.status === 'done' && merge.result
        ? `Wrote ${written} to merges/${merge.result.folder}`
        : `The merge of ${written} did not finish`;
  return (
    <p className="notice" role="status" data-testid="eval-written" data-status={merge.status}>
      {said}: see <a href="#merge-heading">3. Merge</a>.
    </p>
  );
}

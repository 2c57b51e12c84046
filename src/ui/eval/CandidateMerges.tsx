// Candidate merges in the Evaluate step: a method and the parameters it reads (each spec's label and
// range, the method's defaults), added under the name the CLI's `--candidate` gives the same merge and
// scored by the next run beside the models, none written; and what "Write this merge" started.
import { useId, useState } from 'react';
import { agentValue, defaultParams, paramsRecord, validateParams } from '../../methods/defaults.ts';
import { specOf, type ParameterKey } from '../../methods/params.ts';
import { METHOD_LIST, methodOf } from '../../methods/registry/index.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import { candidateLabel } from '../../state/studio/candidates.ts';
import { fitParams } from '../../state/studio/recipe-slice.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { idPart } from '../studio/common.tsx';

type Change = (key: ParameterKey, value: number | number[] | boolean | string) => void;

/** One parameter's input, as its spec's kind and scope say (per agent: one number each). */
function ParamInput({
  name,
  params,
  agents,
  onChange,
}: {
  name: ParameterKey;
  params: MethodParams;
  agents: string[];
  onChange: Change;
}) {
  const id = useId();
  const spec = specOf(name);
  const label = spec.label ?? name;
  const value = paramsRecord(params)[name] ?? spec.default;
  const testId = `eval-cand-${name}`;
  if (spec.scope === 'agent') {
    const values = agents.map((_, t) => agentValue(params, name, t));
    return (
      <fieldset className="studio-field eval-cand__param" title={spec.help}>
        <legend>{label}</legend>
        <div className="studio-list">
          {agents.map((agent, t) => (
            <label key={agent} className="studio-list__item">
              <span>{agent}</span>
              <input
                type="number"
                step={spec.step ?? 'any'}
                value={Number.isFinite(values[t] ?? NaN) ? values[t] : ''}
                data-testid={`${testId}-${idPart(agent)}`}
                onChange={(event) => {
                  const next = [...values];
                  next[t] = event.currentTarget.valueAsNumber;
                  onChange(name, next);
                }}
              />
            </label>
          ))}
        </div>
      </fieldset>
    );
  }
  if (spec.kind === 'boolean')
    return (
      <label className="studio-check eval-cand__param" title={spec.help}>
        <input
          type="checkbox"
          checked={Boolean(value)}
          data-testid={testId}
          onChange={(event) => onChange(name, event.currentTarget.checked)}
        />
        {label}
      </label>
    );
  return (
    <div className="studio-field eval-cand__param" title={spec.help}>
      <label htmlFor={id}>{label}</label>
      {spec.kind === 'enum' ? (
        <select
          id={id}
          value={String(value)}
          data-testid={testId}
          onChange={(event) => onChange(name, event.currentTarget.value)}
        >
          {(spec.values ?? []).map((v) => (
            <option key={v} value={v}>
              {v}
            </option>
          ))}
        </select>
      ) : (
        <input
          id={id}
          type="number"
          step={spec.step ?? 'any'}
          value={Number.isFinite(value as number) ? (value as number) : ''}
          data-testid={testId}
          onChange={(event) => onChange(name, event.currentTarget.valueAsNumber)}
        />
      )}
    </div>
  );
}

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
  const change: Change = (key, value) => {
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
        {methodOf(params.method).parameters.map((name) => (
          <ParamInput key={name} name={name} params={params} agents={agents} onChange={change} />
        ))}
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

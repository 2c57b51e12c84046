// One model's card in step 1: its header facts, how much of it equals the base (for an agent), its
// warnings, rename / reorder / remove, and other files behind a disclosure.
import { useId, useState } from 'react';
import { derivationVerdict } from '../../driver/derivation.ts';
import type { DerivationReport } from '../../worker/protocol.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import type { StudioModel } from '../../state/studio-slice.ts';
import { formatBytes, formatCount } from '../format.ts';
import { ErrorBox } from '../studio/common.tsx';
import { renamed } from './folders.ts';
import { Pickers } from './Pickers.tsx';
import { LoraFacts } from './LoraFacts.tsx';

/** The share of sampled elements bit-identical to the base, with a warning when it is too low. */
function Derivation({ derivation, testId }: { derivation: DerivationReport; testId: string }) {
  if (derivation.error) return <ErrorBox error={derivation.error} testId={`${testId}-derivation-error`} />;
  const { sample } = derivation;
  if (sample.sampled === 0)
    return (
      <p className="muted" data-testid={`${testId}-derivation`} data-sampled="0">
        No float tensor matches the base in shape, so nothing could be compared.
      </p>
    );
  const verdict = derivationVerdict(sample);
  const closeness =
    sample.cosine !== null
      ? `cosine ${sample.cosine.toFixed(3)}, relative distance ${sample.relativeDistance?.toFixed(3) ?? '—'}`
      : 'no cosine: the sample is all zeros';
  return (
    <>
      <dl className="facts studio-facts studio-facts--single">
        <div className="facts__row">
          <dt>Same as the base</dt>
          <dd
            data-testid={`${testId}-derivation`}
            data-share={sample.share}
            data-identical={sample.identical}
            data-sampled={sample.sampled}
            data-cosine={sample.cosine ?? undefined}
            data-distance={sample.relativeDistance ?? undefined}
            data-verdict={verdict}
          >
            {(100 * sample.share).toFixed(1)}% bit-identical ({formatCount(sample.sampled)} sampled)
            {sample.cosine !== null && `, cos ${sample.cosine.toFixed(3)}`}
          </dd>
        </div>
      </dl>
      {verdict === 'dense' && (
        <p className="studio-help" data-testid={`${testId}-derivation-dense`}>
          Nearly every sampled element changed, but the sample stays close to the base ({closeness}): a dense
          fine-tune of this base, as float32 training makes.
        </p>
      )}
      {verdict === 'unrelated' && (
        <p className="notice notice--warn" role="alert" data-testid={`${testId}-derivation-warning`}>
          Only {(100 * sample.share).toFixed(1)}% of the sampled elements equal the base and they point
          elsewhere ({closeness}): this agent does not look fine-tuned from this base. Check that it is the
          right base model.
        </p>
      )}
    </>
  );
}

/** Rename for every model; move up / down and remove for an agent. */
function ModelTools({
  model,
  testId,
  index,
  count,
}: {
  model: StudioModel;
  testId: string;
  index: number;
  count: number;
}) {
  const [editing, setEditing] = useState(false);
  const [refused, setRefused] = useState(false);
  const inputId = useId();
  const store = studioStore.getState();
  if (editing)
    return (
      <form
        className="studio-rename"
        data-testid={`${testId}-rename-form`}
        onSubmit={(event) => {
          event.preventDefault();
          const value = new FormData(event.currentTarget).get('label');
          const ok = store.renameModel(model.slot, typeof value === 'string' ? value : '');
          setRefused(!ok);
          if (!ok) return;
          setEditing(false);
          const now = studioStore.getState().studio.models.find((m) => m.slot === model.slot);
          if (now) renamed(now, model.label);
        }}
      >
        <label htmlFor={inputId} className="visually-hidden">
          New name for {model.label}
        </label>
        <input
          id={inputId}
          name="label"
          defaultValue={model.label}
          data-testid={`${testId}-rename-input`}
          aria-invalid={refused}
          aria-describedby={refused ? `${inputId}-refused` : undefined}
          autoFocus
        />
        <button type="submit" className="button button--small">
          Save
        </button>
        <button
          type="button"
          className="button button--small button--ghost"
          onClick={() => setEditing(false)}
        >
          Cancel
        </button>
        {refused && (
          <span id={`${inputId}-refused`} className="studio-help" role="alert">
            Choose a name no other model has.
          </span>
        )}
      </form>
    );
  return (
    <div className="studio-model__tools">
      <button
        type="button"
        className="button button--small button--ghost"
        data-testid={`${testId}-rename`}
        aria-label={`Rename ${model.label}`}
        onClick={() => {
          setRefused(false);
          setEditing(true);
        }}
      >
        Rename
      </button>
      {model.role === 'agent' && (
        <>
          <button
            type="button"
            className="button button--small button--ghost"
            data-testid={`${testId}-up`}
            aria-label={`Move ${model.label} up`}
            disabled={index === 0}
            onClick={() => void store.moveAgent(model.slot, -1)}
          >
            ↑
          </button>
          <button
            type="button"
            className="button button--small button--ghost"
            data-testid={`${testId}-down`}
            aria-label={`Move ${model.label} down`}
            disabled={index === count - 1}
            onClick={() => void store.moveAgent(model.slot, 1)}
          >
            ↓
          </button>
          <button
            type="button"
            className="button button--small button--danger"
            data-testid={`${testId}-remove`}
            aria-label={`Remove ${model.label}`}
            onClick={() => void store.removeAgent(model.slot)}
          >
            Remove
          </button>
          <button
            type="button"
            className="button button--small button--ghost"
            data-testid={`${testId}-make-base`}
            aria-label={`Make base: ${model.label}`}
            disabled={model.status === 'loading'}
            onClick={() => void store.makeBase(model.slot)}
          >
            Make base
          </button>
        </>
      )}
    </div>
  );
}

export function ModelCard({ model, index, count }: { model: StudioModel; index: number; count: number }) {
  const testId = model.role === 'base' ? 'model-base' : `model-agent-${index}`;
  const report = model.report;
  const derivation = useStudio((s) => s.studio.check.result?.derivation.find((d) => d.slot === model.slot));
  return (
    <article
      className="card studio-model"
      data-testid={testId}
      data-status={model.status}
      data-label={model.label}
      aria-labelledby={`${testId}-title`}
    >
      <div className="studio-model__head">
        <h3 id={`${testId}-title`}>
          <span className="muted">{model.role === 'base' ? 'Base' : `Agent ${index + 1}`}:</span>{' '}
          <span data-testid={`${testId}-label`}>{model.label}</span>
        </h3>
      </div>
      <ModelTools model={model} testId={testId} index={index} count={count} />
      {model.status === 'loading' && <p className="muted">Reading headers…</p>}
      {model.error && <ErrorBox error={model.error} testId={`${testId}-error`} />}
      {model.status === 'error' && (
        <p className="studio-help" data-testid={`${testId}-excluded`}>
          {model.role === 'agent'
            ? 'Left out of the statistics and the merge. Choose other files for it below, or remove it.'
            : 'Choose other files for the base below, or use Make base on one of the agents.'}
        </p>
      )}
      {report && (
        <dl className="facts studio-facts">
          <div className="facts__row">
            <dt>Size</dt>
            <dd data-testid={`${testId}-bytes`}>{formatBytes(report.totalBytes)}</dd>
          </div>
          <div className="facts__row">
            <dt>Parameters</dt>
            <dd data-testid={`${testId}-parameters`}>{formatCount(report.parameters)}</dd>
          </div>
          <div className="facts__row">
            <dt>Tensors</dt>
            <dd data-testid={`${testId}-tensors`}>{formatCount(report.tensors.count)}</dd>
          </div>
          <div className="facts__row">
            <dt>Shards</dt>
            <dd data-testid={`${testId}-shards`}>
              {report.files.length}
              {report.sharded ? ' (indexed)' : ''}
            </dd>
          </div>
          <div className="facts__row facts__row--span2">
            <dt>Dtypes</dt>
            <dd data-testid={`${testId}-dtypes`}>
              {Object.entries(report.dtypes)
                .map(([dtype, n]) => `${dtype} ${formatCount(n)}`)
                .join(', ')}
            </dd>
          </div>
          <div className="facts__row">
            <dt>Architecture</dt>
            <dd>{report.adapter ? 'PEFT LoRA adapter' : (report.config?.modelType ?? 'no config.json')}</dd>
          </div>
        </dl>
      )}
      {report?.adapter && <LoraFacts adapter={report.adapter} slot={model.slot} testId={testId} />}
      {report && derivation && <Derivation derivation={derivation} testId={testId} />}
      {report && report.warnings.length > 0 && (
        <ul className="studio-warnings">
          {report.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      )}
      {/* Other files for a loaded model are a second thought: behind a disclosure, not three more buttons. */}
      <details className="studio-replace" open={model.status === 'error'}>
        <summary>Choose other files</summary>
        <Pickers role={model.role} slot={model.slot} testId={testId} />
      </details>
    </article>
  );
}

// Step 3: the recipe (method, its parameters explained, output dtype), a live λ preview and the
// elements per merge branch from the cached statistics, and the merge job in the worker (into OPFS,
// or straight into a picked folder where the browser has a folder picker) with its progress and Cancel.
import { useId } from 'react';
import type { FloatDtype } from '../../format/dtype.ts';
import { agentValue, paramsRecord, validateParams } from '../../methods/defaults.ts';
import { specOf, type ParameterKey } from '../../methods/params.ts';
import { METHOD_LIST, methodOf } from '../../methods/registry/index.ts';
import { ramLambdas, tensorLocalLambdas } from '../../methods/stats.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { mergeInputs, storageLooksPrivate, type StudioData } from '../../state/studio-slice.ts';
import { derivationVerdict, lineageWarning } from '../../driver/derivation.ts';
import { tensorRecords } from '../../driver/model-transfer.ts';
import type { MergeSummary } from '../../worker/protocol.ts';
import { describeWindowCache } from '../../driver/job.ts';
import { formatBytes, formatCount, formatDuration } from '../format.ts';
import { ErrorBox, idPart, ProgressBar } from '../studio/common.tsx';
import { directoryPicker } from '../../io/browser-folders.ts';
import { budgetAdvice } from '../load/budget.ts';
import { RecipeTools } from './RecipeTools.tsx';
import { useStudioWithoutProgress } from './picks.ts';
import { branchCounts, expectedOutputBytes, percent } from '../stats/summary.ts';

/** Sets one parameter in the store (the widgets below are generic over the specs). */
function setParam(name: ParameterKey, value: number | number[] | boolean | string): void {
  studioStore.getState().setParams({ [name]: value } as Partial<Omit<MethodParams, 'method'>>);
}

function NumberField({ name, value }: { name: ParameterKey; value: number }) {
  const id = useId();
  const spec = specOf(name);
  return (
    <div className="studio-field">
      <label htmlFor={id}>{spec.label ?? name}</label>
      <input
        id={id}
        type="number"
        step={spec.step ?? 'any'}
        value={Number.isFinite(value) ? value : ''}
        aria-describedby={`${id}-help`}
        data-testid={`param-${name}`}
        onChange={(event) => setParam(name, event.currentTarget.valueAsNumber)}
      />
      <p id={`${id}-help`} className="studio-help">
        {spec.help}
      </p>
    </div>
  );
}

function ListField({ name, values, labels }: { name: ParameterKey; values: number[]; labels: string[] }) {
  const id = useId();
  const spec = specOf(name);
  return (
    <fieldset className="studio-field" aria-describedby={`${id}-help`}>
      <legend>{spec.label ?? name}</legend>
      <div className="studio-list">
        {labels.map((label, t) => (
          <label key={label} className="studio-list__item">
            <span>{label}</span>
            <input
              type="number"
              step={spec.step ?? 'any'}
              value={Number.isFinite(values[t] ?? NaN) ? values[t] : ''}
              data-testid={`param-${name}-${idPart(label)}`}
              onChange={(event) => {
                const next = [...values];
                next[t] = event.currentTarget.valueAsNumber;
                setParam(name, next);
              }}
            />
          </label>
        ))}
      </div>
      <p id={`${id}-help`} className="studio-help">
        {spec.help}
      </p>
    </fieldset>
  );
}

function CheckField({ name, checked }: { name: ParameterKey; checked: boolean }) {
  const spec = specOf(name);
  return (
    <div className="studio-field">
      <label className="studio-check">
        <input
          type="checkbox"
          checked={checked}
          data-testid={`param-${name}`}
          onChange={(event) => setParam(name, event.currentTarget.checked)}
        />{' '}
        {spec.label ?? name}
      </label>
      <p className="studio-help">{spec.help}</p>
    </div>
  );
}

function ChoiceField({ name, value }: { name: ParameterKey; value: string }) {
  const id = useId();
  const spec = specOf(name);
  return (
    <div className="studio-field">
      <label htmlFor={id}>{spec.label ?? name}</label>
      <select
        id={id}
        value={value}
        aria-describedby={`${id}-help`}
        data-testid={`param-${name}`}
        onChange={(event) => setParam(name, event.currentTarget.value)}
      >
        {(spec.values ?? []).map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
      <p id={`${id}-help`} className="studio-help">
        {spec.help}
      </p>
    </div>
  );
}

/** The widget of one parameter, as its spec's kind and scope say. */
function ParamField({
  name,
  params,
  labels,
}: {
  name: ParameterKey;
  params: MethodParams;
  labels: string[];
}) {
  const spec = specOf(name);
  const value = paramsRecord(params)[name];
  if (spec.scope === 'agent')
    return (
      <ListField name={name} values={labels.map((_, t) => agentValue(params, name, t))} labels={labels} />
    );
  if (spec.kind === 'boolean') return <CheckField name={name} checked={Boolean(value ?? spec.default)} />;
  if (spec.kind === 'enum') return <ChoiceField name={name} value={String(value ?? spec.default)} />;
  return <NumberField name={name} value={(value ?? spec.default) as number} />;
}

/** Whether the method combines with the RAM branches (the previews of λ and of the branch counts). */
function ramFamily(method: MethodName): boolean {
  return methodOf(method).plan.combine === 'ram';
}

/**
 * How many elements each branch of a RAM-family merge gets (from the statistics' exact counts at
 * their ε), and the tensor bytes the merged model will take in the chosen output dtype.
 */
function BranchPreview({ data }: { data: StudioData }) {
  const analysis = data.analysis.result;
  if (!analysis) return null;
  const base = data.models.find((m) => m.role === 'base')?.report;
  const outputBytes = expectedOutputBytes(analysis.tensors, base ? tensorRecords(base) : [], data.outDtype);
  const ram = ramFamily(data.params.method);
  const branches = branchCounts(analysis.totals);
  const numel = analysis.totals.numel;
  const rows = [
    { key: 'unchanged', text: 'unchanged (c = 0): base value kept', value: branches.unchanged },
    { key: 'unique', text: 'unique (c = 1): θ₀ + λ·τ of the one agent', value: branches.unique },
    { key: 'shared', text: 'shared (c ≥ 2): θ₀ + mean τ of the agents', value: branches.shared },
  ] as const;
  return (
    <div className="studio-branches" data-testid="branch-preview" data-epsilon={analysis.epsilon}>
      {ram && (
        <table className="studio-table studio-table--compact" data-testid="branch-table">
          <caption>Elements per merge branch at ε = {analysis.epsilon} (from the cached statistics)</caption>
          <tbody>
            {rows.map((row) => (
              <tr key={row.key}>
                <th scope="row">{row.text}</th>
                <td data-testid={`branch-${row.key}`}>{formatCount(row.value)}</td>
                <td>{percent(row.value, numel)}%</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p className="studio-inline-facts">
        <span>
          Expected output:{' '}
          <strong data-testid="output-bytes" data-bytes={outputBytes}>
            {formatBytes(outputBytes)}
          </strong>{' '}
          ({formatCount(outputBytes)} bytes of tensor data in {data.outDtype ?? 'the inputs’ dtypes'}, headers
          excluded)
        </span>
      </p>
    </div>
  );
}

/** λ per agent as the merge will use it, from the statistics already computed (no weights re-read). */
function LambdaPreview({ data, labels }: { data: StudioData; labels: string[] }) {
  const { params } = data;
  const analysis = data.analysis.result;
  if (!ramFamily(params.method)) return null;
  if (!analysis) return <p className="muted">λ preview: waiting for the statistics.</p>;
  const stale = analysis.epsilon !== params.epsilon;
  let cells: string[];
  if (methodOf(params.method).plan.lambdas === 'tensor') {
    const perTensor = analysis.tensors.map((t) =>
      tensorLocalLambdas(t, params.r, params.alpha, params.epsilon),
    );
    cells = labels.map((_, a) => {
      const values = perTensor.map((l) => l[a] ?? 1);
      return `${Math.min(...values).toFixed(4)}–${Math.max(...values).toFixed(4)} (per tensor)`;
    });
  } else {
    cells = ramLambdas(analysis.totals, params.method, params.r, params.alpha).map((l) => l.toFixed(6));
  }
  return (
    <div data-testid="lambda-preview" data-stale={String(stale)}>
      <table className="studio-table studio-table--compact">
        <caption>λ per agent (from the cached statistics)</caption>
        <tbody>
          {labels.map((label, t) => (
            <tr key={label}>
              <th scope="row">{label}</th>
              <td data-testid={`lambda-${idPart(label)}`}>{cells[t]}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {stale && (
        <p className="notice notice--warn">
          These statistics were computed with ε = {analysis.epsilon}; the merge recomputes them with ε ={' '}
          {params.epsilon}.
        </p>
      )}
    </div>
  );
}

/** The lineage check's warning, repeated where the merge is started. */
function LineageWarning({ data }: { data: StudioData }) {
  const unrelated = (data.check.result?.derivation ?? [])
    .filter((d) => d.sample && derivationVerdict(d.sample) === 'unrelated')
    .map((d) => data.models.find((m) => m.slot === d.slot)?.label)
    .filter((label): label is string => label !== undefined);
  const warning = lineageWarning(unrelated, 'see its card under Models');
  if (!warning) return null;
  return (
    <p className="notice notice--warn" data-testid="merge-lineage-warning">
      {warning}
    </p>
  );
}

/** Said before a merge into storage that looks held in memory, which closing the window loses. */
function PrivateStorageNote({ data, canPick }: { data: StudioData; canPick: boolean }) {
  const storage = data.storage;
  if (!storage || !storageLooksPrivate(storage)) return null;
  return (
    <p className="notice notice--warn" data-testid="merge-private-storage">
      This browser gives the site only {formatBytes(storage.quota)} of storage, as a private window does,
      which keeps it in memory and loses it when the window closes.{' '}
      {canPick
        ? 'For a large model use Merge into a folder…, which writes straight to disk.'
        : 'Save a large model to disk right after merging, or use a normal window.'}
    </p>
  );
}

/** What the merge just wrote and where, said where the Merge button is. */
function MergeDone({ summary }: { summary: MergeSummary }) {
  const bytes = summary.files.reduce((sum, f) => sum + f.bytes, 0);
  const cache = summary.stages.windowCache;
  const kept =
    cache &&
    describeWindowCache(
      cache,
      cache.memoryBudget,
      formatBytes,
      (b) => `${budgetAdvice(b)}, set under Engine and memory,`,
    );
  const where =
    summary.location === 'opfs'
      ? `this browser's storage, merges/${summary.folder}`
      : `the folder ${summary.folder}`;
  return (
    <p className="notice notice--ok" role="status" data-testid="merge-done">
      Wrote {summary.files.length} files ({formatBytes(bytes)}) to {where} in{' '}
      {formatDuration(summary.elapsedMs)}. <a href="#export-heading">See it under Export</a>.
      {kept && <span data-testid="merge-kept"> {kept}</span>}
    </p>
  );
}

const DTYPES: { value: FloatDtype | ''; text: string }[] = [
  { value: '', text: 'Same as the inputs' },
  { value: 'BF16', text: 'bfloat16' },
  { value: 'F16', text: 'float16' },
  { value: 'F32', text: 'float32' },
];

/** The running merge's progress bar, rendered on each progress report apart from the panel. */
function MergeProgress() {
  const progress = useStudio((s) => s.studio.merge.progress);
  return <ProgressBar progress={progress} testId="merge-progress" label="Merge progress" />;
}

export function MergePanel() {
  // Without the merge's progress, which MergeProgress reads: the recipe, previews and their per-tensor
  // λ are not worked out again ten times a second.
  const data = useStudioWithoutProgress();
  // A fixed id: the skip link "Skip to the merge recipe" focuses this select.
  const methodId = 'merge-method';
  const dtypeId = useId();
  const folderHelpId = useId();
  const labels = data.models.filter((m) => m.role === 'agent').map((m) => m.label);
  const { params, merge } = data;
  const inputs = mergeInputs(data);
  const problems = validateParams(params, labels.length);
  const mismatch = data.check.result !== null && !data.check.result.compat.ok;
  const blocked = 'blocked' in inputs ? inputs.blocked : mismatch ? 'The models do not match.' : null;
  const running = merge.status === 'running';
  const shown = methodOf(params.method).parameters;
  const pick = directoryPicker();
  const agentsText = `${labels.length} agent${labels.length === 1 ? '' : 's'}`;
  const disabled = running || blocked !== null || problems.length > 0;
  return (
    <section
      className="panel"
      aria-labelledby="merge-heading"
      data-testid="merge-panel"
      data-status={merge.status}
    >
      <div className="panel__head">
        <h2 id="merge-heading">3. Merge</h2>
      </div>
      <div className="studio-recipe">
        <div className="studio-field">
          <label htmlFor={methodId}>Method</label>
          <select
            id={methodId}
            value={params.method}
            data-testid="method-select"
            onChange={(event) => studioStore.getState().setMethod(event.currentTarget.value as MethodName)}
          >
            {METHOD_LIST.map((m) => (
              <option key={m.name} value={m.name}>
                {m.label}
              </option>
            ))}
          </select>
        </div>
        {shown.map((name) => (
          <ParamField key={name} name={name} params={params} labels={labels} />
        ))}
        <div className="studio-field">
          <label htmlFor={dtypeId}>Output dtype</label>
          <select
            id={dtypeId}
            value={data.outDtype ?? ''}
            data-testid="out-dtype"
            onChange={(event) =>
              studioStore.getState().setOutDtype((event.currentTarget.value || null) as FloatDtype | null)
            }
          >
            {DTYPES.map((d) => (
              <option key={d.value} value={d.value}>
                {d.text}
              </option>
            ))}
          </select>
        </div>
      </div>
      {problems.length > 0 && labels.length > 0 && (
        <ul className="notice notice--error" data-testid="param-problems">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      <LineageWarning data={data} />
      <PrivateStorageNote data={data} canPick={Boolean(pick)} />
      <div className="studio-actions">
        <button
          type="button"
          className="button"
          data-testid="merge-run"
          disabled={disabled}
          onClick={() => void studioStore.getState().runMerge()}
        >
          Merge {agentsText}
        </button>
        {pick && (
          <button
            type="button"
            className="button button--secondary"
            data-testid="merge-run-folder"
            aria-describedby={folderHelpId}
            disabled={disabled}
            onClick={() => void studioStore.getState().mergeIntoFolder(() => pick({ mode: 'readwrite' }))}
          >
            Merge into a folder…
          </button>
        )}
        {running && (
          <button
            type="button"
            className="button button--secondary"
            data-testid="merge-cancel"
            onClick={() => studioStore.getState().cancelMerge()}
          >
            Cancel
          </button>
        )}
        {blocked && <span className="muted">{blocked}</span>}
      </div>
      {pick && (
        <p id={folderHelpId} className="studio-help">
          Merge into a folder… writes the model straight into an empty folder you pick (or create), so a large
          merge needs its disk space and time once; Merge writes to this browser&apos;s private storage first.
        </p>
      )}
      {running && <MergeProgress />}
      {merge.status === 'done' && merge.result && <MergeDone summary={merge.result} />}
      {merge.status === 'cancelled' && (
        <p data-testid="merge-cancelled" role="status">
          The merge was cancelled; nothing was left in the output folder.
        </p>
      )}
      {merge.error && <ErrorBox error={merge.error} testId="merge-error" />}
      {/* Previews and the recipe's other forms come after the button, so it is a few Tabs from the method. */}
      <LambdaPreview data={data} labels={data.analysisLabels} />
      <BranchPreview data={data} />
      <RecipeTools />
    </section>
  );
}

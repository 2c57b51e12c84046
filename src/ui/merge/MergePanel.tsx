// Step 3: the recipe (method, its parameters explained, output dtype), a live λ preview and the
// elements per merge branch from the cached statistics, and the merge job in the worker (into OPFS,
// or straight into a picked folder where the browser has a folder picker) with its progress and Cancel.
import { readDtypeText } from '../stats/ReadDtypeField.tsx';
import { useEffect, useId, useRef } from 'react';
import { ParamFields, type ParamChange } from './ParamFields.tsx';
import { RecipeNotice } from './RecipeNotice.tsx';
import type { FloatDtype } from '../../format/dtype.ts';
import { validateParams } from '../../methods/defaults.ts';
import { METHOD_LIST, methodOf } from '../../methods/registry/index.ts';
import { ramLambdas, tensorLocalLambdas } from '../../methods/stats.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import { studioStore } from '../../state/store.ts';
import { statsInputs, storageLooksPrivate, type StudioData } from '../../state/studio-slice.ts';
import { derivationVerdict, lineageWarning } from '../../driver/derivation.ts';
import { tensorRecords } from '../../driver/model-transfer.ts';
import { formatBytes, formatCount } from '../format.ts';
import { idPart } from '../studio/common.tsx';
import { directoryPicker } from '../../io/browser-folders.ts';
import { MergeRun } from './MergeRun.tsx';
import { RecipeTools } from './RecipeTools.tsx';
import { defaultMergeName, folderPart, MAX_NAME } from '../../state/studio/names.ts';
import { useStudioWithoutProgress } from './picks.ts';
import { branchCounts, expectedOutputBytes, percent } from '../stats/summary.ts';

/** Sets one parameter in the store. */
const setParam: ParamChange = (name, value) =>
  studioStore.getState().setParams({ [name]: value } as Partial<Omit<MethodParams, 'method'>>);

const clearGradient = (key: string, agent: number | null): void =>
  studioStore.getState().clearGradient(key, agent);

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

const DTYPES: { value: FloatDtype | ''; text: string }[] = [
  { value: '', text: 'Same as the inputs' },
  { value: 'BF16', text: 'bfloat16' },
  { value: 'F16', text: 'float16' },
  { value: 'F32', text: 'float32' },
];

/**
 * Keeps the sticky merge column inside the window wherever the page is scrolled: its height is the
 * window's less where its top is now (below the header and step bar at the top of the page, 12 px
 * once stuck), so the run region at its bottom is always on screen (CSS alone knows only the stuck case).
 */
function useColumnTop(): React.RefObject<HTMLElement | null> {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    const panel = ref.current;
    if (!panel) return;
    let frame = 0;
    const update = () => {
      frame = 0;
      panel.style.setProperty('--merge-top', `${Math.max(12, panel.getBoundingClientRect().top)}px`);
    };
    const schedule = () => {
      frame ||= requestAnimationFrame(update);
    };
    update();
    window.addEventListener('scroll', schedule, { passive: true });
    window.addEventListener('resize', schedule);
    return () => {
      cancelAnimationFrame(frame);
      window.removeEventListener('scroll', schedule);
      window.removeEventListener('resize', schedule);
    };
  }, []);
  return ref;
}

export function MergePanel() {
  const columnRef = useColumnTop();
  // Without the merge's progress, which MergeProgress reads: the recipe, previews and their per-tensor
  // λ are not worked out again ten times a second.
  const data = useStudioWithoutProgress();
  // A fixed id: the skip link "Skip to the merge recipe" focuses this select.
  const methodId = 'merge-method';
  const dtypeId = useId();
  const folderHelpId = useId();
  const nameId = useId();
  const nameHelpId = useId();
  const labels = data.models.filter((m) => m.role === 'agent').map((m) => m.label);
  const { params, merge } = data;
  // An agent that could not be opened is left out of the merge (statsInputs), as of the statistics.
  const inputs = statsInputs(data);
  const leftOut = 'blocked' in inputs ? [] : inputs.left.map((m) => m.label);
  const merged = 'blocked' in inputs ? labels.length : inputs.agents.length;
  const problems = validateParams(params, labels.length);
  const mismatch = data.check.result !== null && !data.check.result.compat.ok;
  const blocked = 'blocked' in inputs ? inputs.blocked : mismatch ? 'The models do not match.' : null;
  const running = merge.status === 'running';
  const pick = directoryPicker();
  const agentsText = `${merged} agent${merged === 1 ? '' : 's'}`;
  const disabled = running || blocked !== null || problems.length > 0;
  const defaultName = defaultMergeName(params.method, labels.length, new Date());
  const name = data.mergeName ?? defaultName;
  return (
    <section
      ref={columnRef}
      className="panel"
      aria-labelledby="merge-heading"
      data-testid="merge-panel"
      data-status={merge.status}
    >
      <div className="panel__head">
        <h2 id="merge-heading">3. Merge</h2>
      </div>
      <RecipeNotice />
      <div className="studio-recipe">
        <div className="studio-field studio-field--name">
          <label htmlFor={nameId}>Name</label>
          <input
            id={nameId}
            type="text"
            value={data.mergeName ?? ''}
            placeholder={defaultName}
            maxLength={MAX_NAME}
            spellCheck={false}
            aria-describedby={nameHelpId}
            data-testid="merge-name"
            onChange={(event) => studioStore.getState().setMergeName(event.currentTarget.value)}
          />
          <span id={nameHelpId} className="studio-help">
            Folder <code>{folderPart(name)}-…</code>; also the model card&apos;s title and the zip&apos;s
            name.
          </span>
        </div>
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
        <ParamFields
          params={params}
          agents={labels}
          onChange={setParam}
          testIdPrefix="param"
          gradients={data.gradients}
          onClearGradient={clearGradient}
        />
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
        <div className="studio-field">
          <span className="studio-field__name">Compare at</span>
          <span data-testid="merge-read-dtype">
            {readDtypeText(data.readDtype, data.check.result?.precision)} (step 2)
          </span>
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
      <MergeRun
        merge={merge}
        disabled={disabled}
        blocked={blocked}
        leftOut={leftOut}
        agentsText={agentsText}
        pick={pick ?? null}
        folderHelpId={folderHelpId}
      />
      {pick && (
        <p id={folderHelpId} className="studio-help">
          Merge into a folder… writes the model straight into an empty folder you pick (or create), so a large
          merge needs its disk space and time once; Merge writes to this browser&apos;s private storage first.
        </p>
      )}
      {/* Previews and the recipe's other forms come after the button, so it is a few Tabs from the method. */}
      <LambdaPreview data={data} labels={data.analysisLabels} />
      <BranchPreview data={data} />
      <RecipeTools />
    </section>
  );
}

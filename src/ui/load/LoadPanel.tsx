// Step 1: the base and agents (the embedded demo by default; a picked folder, chosen files or a drop
// otherwise), each with its header-only preflight and, for an agent, a sampled check that it derives
// from the base; then the compatibility report and what the merge will need.
import { useId, useMemo, useState, type DragEvent } from 'react';
import { derivationVerdict } from '../../driver/derivation.ts';
import {
  MEMORY_BUDGETS,
  type DerivationReport,
  type FileRef,
  type MemoryEstimate,
} from '../../worker/protocol.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import type { ModelRole, StudioModel } from '../../state/studio-slice.ts';
import { formatBytes, formatCount } from '../format.ts';
import { issueAt, ISSUE_KINDS, type CompatIssue, type IssueColumns } from '../../format/compat.ts';
import { ErrorBox } from '../studio/common.tsx';
import { VirtualTable, type VirtualColumn } from './VirtualTable.tsx';
import { focusHeading } from '../studio/StepBar.tsx';
import { branchCounts, percent } from '../stats/summary.ts';
import { keepFolders, requestRead, type KeptFolder } from '../../io/handle-store.ts';
import { at } from '../../io/checked.ts';

interface Picked {
  label: string;
  files: FileRef[];
  /** The folder, when picked with showDirectoryPicker: kept so that a reload can reopen it. */
  handle?: FileSystemDirectoryHandle;
}

type DirectoryPicker = (options?: { mode?: 'read' | 'readwrite' }) => Promise<FileSystemDirectoryHandle>;

export function directoryPicker(): DirectoryPicker | undefined {
  return (globalThis as { showDirectoryPicker?: DirectoryPicker }).showDirectoryPicker;
}

const isWeights = (name: string): boolean => name.endsWith('.safetensors');
const isSwap = (name: string): boolean => name.endsWith('.crswap');

/** Top-level files of a handle's folder, and its subfolders. */
async function readHandle(
  dir: FileSystemDirectoryHandle,
): Promise<{ files: FileRef[]; folders: FileSystemDirectoryHandle[] }> {
  const files: FileRef[] = [];
  const folders: FileSystemDirectoryHandle[] = [];
  for await (const handle of dir.values()) {
    if (handle.kind === 'directory') folders.push(handle as FileSystemDirectoryHandle);
    else if (!isSwap(handle.name))
      files.push({ name: handle.name, blob: await (handle as FileSystemFileHandle).getFile() });
  }
  return { files, folders };
}

/**
 * Reopens kept folders after a reload (from a click, for the permission prompt): a kept base takes
 * the base's place, kept agents replace the agents, in the order given. Returns the labels refused.
 */
export async function reopenFolders(folders: readonly KeptFolder[]): Promise<string[]> {
  const refused: string[] = [];
  const opened: Picked[] = [];
  const roles: ModelRole[] = [];
  for (const folder of folders) {
    if (!(await requestRead(folder.handle))) {
      refused.push(folder.label);
      continue;
    }
    opened.push({ label: folder.label, files: (await readHandle(folder.handle)).files });
    roles.push(folder.role);
  }
  const store = studioStore.getState();
  const base = opened.find((_, i) => roles[i] === 'base');
  const agents = opened.filter((_, i) => roles[i] === 'agent');
  if (base) void store.loadFiles('base', null, base.label, base.files);
  if (agents.length > 0) {
    for (const model of store.studio.models.filter((m) => m.role === 'agent'))
      await store.removeAgent(model.slot);
    await store.loadAgents(agents);
  }
  return refused;
}

/** A model folder, or a folder of model folders (no weights of its own): one pick per model. */
async function pickFolder(pick: DirectoryPicker): Promise<Picked[]> {
  const dir = await pick({ mode: 'read' });
  const top = await readHandle(dir);
  if (top.files.some((f) => isWeights(f.name)) || top.folders.length === 0)
    return [{ label: dir.name, files: top.files, handle: dir }];
  const inner = await Promise.all(
    top.folders.map(async (folder) => ({
      label: folder.name,
      files: (await readHandle(folder)).files,
      handle: folder,
    })),
  );
  return inner.filter((p) => p.files.some((f) => isWeights(f.name)));
}

const byLabel = (a: Picked, b: Picked): number => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0);

/**
 * Files from an <input>: a folder input keeps each model folder's own files and names the model
 * after it; a folder without weights of its own is read as a folder of model folders.
 */
function fromInput(list: FileList): Picked[] {
  const all = [...list];
  const [first] = all;
  if (!first) return [];
  if (first.webkitRelativePath) {
    const parts = (f: File): string[] => f.webkitRelativePath.split('/');
    const folder = parts(first)[0] ?? 'model';
    const top = all.filter((f) => parts(f).length === 2);
    if (top.some((f) => isWeights(f.name)))
      return [{ label: folder, files: top.map((f) => ({ name: f.name, blob: f })) }];
    const groups = new Map<string, FileRef[]>();
    for (const f of all.filter((file) => parts(file).length === 3)) {
      const name = at(parts(f), 1, f.webkitRelativePath);
      const group = groups.get(name) ?? [];
      group.push({ name: f.name, blob: f });
      groups.set(name, group);
    }
    const inner = [...groups]
      .map(([label, files]) => ({ label, files }))
      .filter((p) => p.files.some((f) => isWeights(f.name)));
    return inner.length > 0 ? inner.sort(byLabel) : [{ label: folder, files: [] }];
  }
  const weights = all.find((f) => isWeights(f.name));
  const label = (weights ?? first).name.replace(/(-\d{5}-of-\d{5})?\.safetensors$/, '');
  return [{ label, files: all.map((f) => ({ name: f.name, blob: f })) }];
}

/** The files and subfolders of a dropped folder (readEntries answers in batches until an empty one). */
function readDirectoryEntry(
  dir: FileSystemDirectoryEntry,
): Promise<{ files: File[]; folders: FileSystemDirectoryEntry[] }> {
  return new Promise((resolve, reject) => {
    const reader = dir.createReader();
    const files: Promise<File>[] = [];
    const folders: FileSystemDirectoryEntry[] = [];
    const next = (): void =>
      reader.readEntries((entries) => {
        if (entries.length === 0) {
          Promise.all(files).then((read) => resolve({ files: read, folders }), reject);
          return;
        }
        for (const entry of entries)
          if (entry.isFile)
            files.push(new Promise((ok, fail) => (entry as FileSystemFileEntry).file(ok, fail)));
          else if (entry.isDirectory) folders.push(entry as FileSystemDirectoryEntry);
        next();
      }, reject);
    next();
  });
}

const refs = (files: File[]): FileRef[] =>
  files.filter((f) => !isSwap(f.name)).map((f) => ({ name: f.name, blob: f }));

/** Every dropped folder becomes one model, or one per model folder inside it; loose files make one. */
async function fromDrop(event: DragEvent): Promise<Picked[]> {
  const entries = [...event.dataTransfer.items].map((item) => item.webkitGetAsEntry());
  const dirs = entries.filter((entry): entry is FileSystemDirectoryEntry => entry?.isDirectory === true);
  if (dirs.length === 0) return fromInput(event.dataTransfer.files);
  const picks: Picked[] = [];
  for (const dir of dirs) {
    const top = await readDirectoryEntry(dir);
    if (top.files.some((f) => isWeights(f.name)) || top.folders.length === 0) {
      picks.push({ label: dir.name, files: refs(top.files) });
      continue;
    }
    for (const folder of top.folders) {
      const inner = await readDirectoryEntry(folder);
      if (inner.files.some((f) => isWeights(f.name)))
        picks.push({ label: folder.name, files: refs(inner.files) });
    }
  }
  return picks;
}

/** Loads picks where they were chosen: the first into the base or agent slot, any others as new agents. */
function loadPicks(role: ModelRole, slot: string | null, picks: Picked[]): void {
  const store = studioStore.getState();
  if (picks.length === 0) return;
  // Only the first pick takes the base's place; any others become agents.
  const kept = picks.flatMap((p, i) =>
    p.handle ? [{ label: p.label, role: i === 0 ? role : ('agent' as const), handle: p.handle }] : [],
  );
  keepFolders(kept).catch(() => undefined);
  if (role === 'agent' && slot === null) {
    void store.loadAgents(picks);
    return;
  }
  const [first, ...rest] = picks;
  if (!first) return;
  void store.loadFiles(role, slot, first.label, first.files);
  if (rest.length > 0) void store.loadAgents(rest);
}

function Pickers({ role, slot, testId }: { role: ModelRole; slot: string | null; testId: string }) {
  const id = useId();
  const [over, setOver] = useState(false);
  const pick = directoryPicker();
  const load = (picks: Picked[]): void => loadPicks(role, slot, picks);
  const what = role === 'base' ? 'the base model' : slot === null ? 'a new agent' : 'this agent';
  return (
    <div
      className={`studio-drop${over ? ' studio-drop--over' : ''}`}
      data-testid={`${testId}-drop`}
      onDragOver={(event) => {
        event.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(event) => {
        event.preventDefault();
        setOver(false);
        void fromDrop(event).then(load);
      }}
    >
      {pick && (
        <button
          type="button"
          className="button button--secondary"
          data-testid={`${testId}-pick-folder`}
          onClick={() => void pickFolder(pick).then(load, () => undefined)}
        >
          Choose folder…
        </button>
      )}
      <label className="button button--secondary studio-file" htmlFor={`${id}-folder`}>
        Folder (upload)
      </label>
      <input
        id={`${id}-folder`}
        className="visually-hidden"
        type="file"
        multiple
        {...{ webkitdirectory: '' }}
        aria-label={`Choose a model folder for ${what}`}
        data-testid={`${testId}-folder-input`}
        onChange={(event) => load(fromInput(event.currentTarget.files ?? new DataTransfer().files))}
      />
      <label className="button button--secondary studio-file" htmlFor={`${id}-files`}>
        Files
      </label>
      <input
        id={`${id}-files`}
        className="visually-hidden"
        type="file"
        multiple
        accept=".safetensors,.json,.txt,.model,.jinja,.tiktoken"
        aria-label={`Choose the model files for ${what}`}
        data-testid={`${testId}-files-input`}
        onChange={(event) => load(fromInput(event.currentTarget.files ?? new DataTransfer().files))}
      />
      <span className="muted">
        or drop {slot === null && role === 'agent' ? 'one or more folders' : 'a folder'} or files here
      </span>
    </div>
  );
}

/** The share of sampled elements bit-identical to the base, with a warning when it is too low. */
function Derivation({ derivation, testId }: { derivation: DerivationReport; testId: string }) {
  if (derivation.error) return <ErrorBox error={derivation.error} testId={`${testId}-derivation-error`} />;
  const { sample } = derivation;
  if (sample.sampled === 0)
    return (
      <p className="muted" data-testid={`${testId}-derivation`} data-sampled="0">
        No float tensor matches the base in dtype and shape, so nothing could be compared.
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
          if (ok) setEditing(false);
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
        </>
      )}
    </div>
  );
}

function ModelCard({ model, index, count }: { model: StudioModel; index: number; count: number }) {
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
            <dd>{report.config?.modelType ?? 'no config.json'}</dd>
          </div>
        </dl>
      )}
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

/** The smallest budget the engine card offers of at least `bytes`, in words for a sentence. */
export function budgetAdvice(bytes: number): string {
  const offered = MEMORY_BUDGETS.find((b) => b >= bytes);
  return offered
    ? `a memory budget of ${formatBytes(offered)}`
    : `a memory budget of ${formatBytes(bytes)} (more than the studio offers; the command line takes any)`;
}

/** What the budget leaves to keep windows between a counting pass and the merge, and what that reads. */
function KeptWindows({ memory }: { memory: MemoryEstimate }) {
  const methods = 'TIES, Breadcrumbs and tensor-local RAM+';
  const windows = (n: number): string => `${formatCount(n)} window${n === 1 ? '' : 's'}`;
  if (memory.largestWindows <= 2)
    return <>None needed: the two window sets hold every tensor here whole, so every method reads it once.</>;
  const room =
    memory.keptWindows === 0
      ? 'No room beyond the window buffers'
      : `Room for ${windows(memory.keptWindows)} (${formatBytes(memory.keptBytes)})`;
  const largest = windows(memory.largestWindows);
  if (memory.rereadTensors === 0)
    return (
      <>
        {room}: {methods} read every tensor here once (the largest takes {largest}).
      </>
    );
  const which =
    memory.rereadTensors === memory.mergedTensors
      ? 'read every tensor here in part twice'
      : `read every tensor here once but ${memory.rereadTensors === 1 ? 'the largest' : `the ${formatCount(memory.rereadTensors)} largest`}`;
  return (
    <>
      {room}: {methods} {which} (the largest takes {largest}), whose windows past the first{' '}
      {formatCount(2 + memory.keptWindows)} they read twice; {budgetAdvice(memory.readOnceBudget)} would read
      every tensor once.
    </>
  );
}

/** The memory budget of the next jobs: larger ones keep more windows on the GPU between passes. */
function BudgetSelect() {
  const budget = useStudio((s) => s.studio.memoryBudget);
  return (
    <select
      id="memory-budget-select"
      data-testid="memory-budget-select"
      value={budget}
      onChange={(e) => void studioStore.getState().setMemoryBudget(Number(e.target.value))}
    >
      {MEMORY_BUDGETS.map((b) => (
        <option key={b} value={b}>
          {formatBytes(b)}
        </option>
      ))}
    </select>
  );
}

function CompatReportView() {
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
      {/* Details on demand: one line says what the merge will need. */}
      <details className="card card--wide studio-engine" data-testid="engine-card">
        <summary>
          <h3>Engine and memory</h3>{' '}
          <span className="muted">
            {engine.kind === 'gpu' ? 'WebGPU' : 'CPU reference'}; reads {formatBytes(memory.inputBytes)} per
            pass, writes {formatBytes(memory.outputBytes)}
          </span>
        </summary>
        <dl className="facts">
          <div className="facts__row">
            <dt>Engine</dt>
            <dd data-testid="engine-kind" data-kind={engine.kind}>
              {engine.kind === 'gpu' ? 'WebGPU' : 'CPU reference'}: {engine.description}
            </dd>
          </div>
          {engine.fallbackReason && (
            <div className="facts__row">
              <dt>Why not the GPU</dt>
              <dd>{engine.fallbackReason}</dd>
            </div>
          )}
          {engine.limits && (
            <div className="facts__row">
              <dt>Largest buffer / binding</dt>
              <dd>
                {formatBytes(engine.limits.maxBufferSize)} /{' '}
                {formatBytes(engine.limits.maxStorageBufferBindingSize)}
              </dd>
            </div>
          )}
          <div className="facts__row">
            <dt>Tensors merged</dt>
            <dd>{formatCount(memory.mergedTensors)}</dd>
          </div>
          <div className="facts__row">
            <dt>Read per pass</dt>
            <dd data-testid="memory-input">{formatBytes(memory.inputBytes)}</dd>
          </div>
          <div className="facts__row">
            <dt>Output (OPFS)</dt>
            <dd data-testid="memory-output">{formatBytes(memory.outputBytes)}</dd>
          </div>
          <div className="facts__row">
            <dt>Window buffers</dt>
            <dd data-testid="memory-gpu">
              {formatBytes(memory.gpuBytes)} ({formatCount(memory.windowElements)} elements per window), kept
              for a minute after each job so that the next one starts without making them again
            </dd>
          </div>
          <div className="facts__row">
            <dt>Read ahead, written behind</dt>
            <dd data-testid="memory-driver">
              up to {formatBytes(memory.driverBytes)}: the next tensor's first window of every model, read
              while this one merges, and output queued for storage and for its checksums
            </dd>
          </div>
          <div className="facts__row">
            <dt>Kept between passes</dt>
            <dd data-testid="memory-kept" data-kept={memory.keptWindows}>
              <KeptWindows memory={memory} />
            </dd>
          </div>
          <div className="facts__row">
            <dt>
              <label htmlFor="memory-budget-select">Memory budget</label>
            </dt>
            <dd data-testid="memory-budget">
              {formatBytes(memory.budgetBytes)} for GPU buffers, their copies in the worker, the read-ahead,
              the write-behind and the checksums' copies together, at any model size. A larger one keeps more
              windows on the GPU between passes: <BudgetSelect />
            </dd>
          </div>
        </dl>
      </details>
    </div>
  );
}

/** The statistics' headline where the models are, so the first screen answers "how much did they change". */
function Headline() {
  const analysis = useStudio((s) => s.studio.analysis);
  const labels = useStudio((s) => s.studio.analysisLabels);
  const totals = analysis.result?.totals;
  if (analysis.status === 'running')
    return (
      <p className="studio-headline muted" data-testid="headline-stats" data-status="running">
        Statistics: reading the weights…
      </p>
    );
  if (!totals) return null;
  const branches = branchCounts(totals);
  const changed = totals.numel - branches.unchanged;
  return (
    <p className="studio-headline" data-testid="headline-stats" data-status="done">
      <strong>{formatCount(totals.numel)}</strong> elements over {labels.length} agent
      {labels.length === 1 ? '' : 's'}: <strong>{percent(changed, totals.numel)}%</strong> changed,{' '}
      <strong>{percent(branches.unique, totals.numel)}%</strong> by one agent only,{' '}
      <strong>{percent(branches.shared, totals.numel)}%</strong> by several,{' '}
      <strong>{formatCount(totals.signConflicts)}</strong> sign conflicts.{' '}
      <a
        href="#stats-heading"
        onClick={(event) => {
          event.preventDefault();
          focusHeading('stats-heading');
        }}
      >
        Details
      </a>
    </p>
  );
}

export function LoadPanel() {
  const models = useStudio((s) => s.studio.models);
  const source = useStudio((s) => s.studio.source);
  const base = models.find((m) => m.role === 'base');
  const agents = models.filter((m) => m.role === 'agent');
  return (
    <section className="panel" aria-labelledby="load-heading" data-testid="load-panel" data-source={source}>
      <div className="panel__head">
        <h2 id="load-heading">1. Models</h2>
        <button
          type="button"
          className="button button--secondary"
          data-testid="load-demo"
          onClick={() => void studioStore.getState().loadDemo()}
        >
          Load the demo set
        </button>
      </div>
      <p className="muted studio-lede">
        A base model and the agents fine-tuned from it: only headers are read, weights stay on this machine.
      </p>
      <Headline />
      <div className="studio-models">
        {base ? (
          <ModelCard model={base} index={0} count={1} />
        ) : (
          <article className="card studio-model" data-testid="model-base" data-status="empty">
            <h3>Base</h3>
            <Pickers role="base" slot={null} testId="model-base" />
          </article>
        )}
        {agents.map((agent, i) => (
          <ModelCard key={agent.slot} model={agent} index={i} count={agents.length} />
        ))}
        <article className="card studio-model" data-testid="model-new-agent">
          <h3>Add an agent</h3>
          <Pickers role="agent" slot={null} testId="model-new-agent" />
        </article>
      </div>
      <CompatReportView />
    </section>
  );
}

// Step 1: the base and agents (the embedded demo by default; a picked folder, chosen files or a drop
// otherwise), each with its header-only preflight and, for an agent, a sampled check that it derives
// from the base; then the compatibility report and what the merge will need.
import { useId, useState, type DragEvent } from 'react';
import { DERIVATION_WARN_SHARE } from '../../engine/derivation.ts';
import type { DerivationReport, FileRef } from '../../engine/worker.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import type { ModelRole, StudioModel } from '../../state/studio-slice.ts';
import { formatBytes, formatCount } from '../format.ts';
import { ErrorBox } from './common.tsx';

interface Picked {
  label: string;
  files: FileRef[];
}

type DirectoryPicker = (options?: { mode?: 'read' | 'readwrite' }) => Promise<FileSystemDirectoryHandle>;

export function directoryPicker(): DirectoryPicker | undefined {
  return (globalThis as { showDirectoryPicker?: DirectoryPicker }).showDirectoryPicker;
}

async function pickFolder(pick: DirectoryPicker): Promise<Picked> {
  const dir = await pick({ mode: 'read' });
  const files: FileRef[] = [];
  for await (const handle of dir.values())
    if (handle.kind === 'file' && !handle.name.endsWith('.crswap'))
      files.push({ name: handle.name, blob: await (handle as FileSystemFileHandle).getFile() });
  return { label: dir.name, files };
}

/** Files from an <input>: a folder input keeps its top-level files and names the model after the folder. */
function fromInput(list: FileList): Picked | null {
  const all = [...list];
  if (all.length === 0) return null;
  const first = all[0]!;
  const relative = first.webkitRelativePath;
  if (relative) {
    const folder = relative.split('/')[0] ?? 'model';
    const top = all.filter((f) => f.webkitRelativePath.split('/').length === 2);
    return { label: folder, files: top.map((f) => ({ name: f.name, blob: f })) };
  }
  const weights = all.find((f) => f.name.endsWith('.safetensors'));
  const label = (weights ?? first).name.replace(/(-\d{5}-of-\d{5})?\.safetensors$/, '');
  return { label, files: all.map((f) => ({ name: f.name, blob: f })) };
}

function readDirectoryEntry(dir: FileSystemDirectoryEntry): Promise<File[]> {
  return new Promise((resolve, reject) => {
    const reader = dir.createReader();
    const files: Promise<File>[] = [];
    // readEntries returns the folder in batches until an empty one.
    const next = (): void =>
      reader.readEntries((entries) => {
        if (entries.length === 0) {
          Promise.all(files).then(resolve, reject);
          return;
        }
        for (const entry of entries)
          if (entry.isFile)
            files.push(new Promise((ok, fail) => (entry as FileSystemFileEntry).file(ok, fail)));
        next();
      }, reject);
    next();
  });
}

async function fromDrop(event: DragEvent): Promise<Picked | null> {
  const items = [...event.dataTransfer.items];
  const dir = items.map((item) => item.webkitGetAsEntry()).find((entry) => entry?.isDirectory);
  if (dir) {
    const files = await readDirectoryEntry(dir as FileSystemDirectoryEntry);
    return { label: dir.name, files: files.map((f) => ({ name: f.name, blob: f })) };
  }
  return fromInput(event.dataTransfer.files);
}

function Pickers({ role, slot, testId }: { role: ModelRole; slot: string | null; testId: string }) {
  const id = useId();
  const [over, setOver] = useState(false);
  const pick = directoryPicker();
  const load = (picked: Picked | null): void => {
    if (picked) void studioStore.getState().loadFiles(role, slot, picked.label, picked.files);
  };
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
      <span className="muted">or drop a folder or files here</span>
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
  const low = sample.share < DERIVATION_WARN_SHARE;
  return (
    <>
      <dl className="facts studio-facts">
        <div className="facts__row">
          <dt>Same as the base</dt>
          <dd
            data-testid={`${testId}-derivation`}
            data-share={sample.share}
            data-identical={sample.identical}
            data-sampled={sample.sampled}
          >
            {(100 * sample.share).toFixed(1)}% bit-identical ({formatCount(sample.sampled)} elements sampled)
          </dd>
        </div>
      </dl>
      {low && (
        <p className="notice notice--warn" role="alert" data-testid={`${testId}-derivation-warning`}>
          Only {(100 * sample.share).toFixed(1)}% of the sampled elements equal the base: this agent does not
          look fine-tuned from this base. Check that it is the right base model.
        </p>
      )}
    </>
  );
}

function ModelCard({ model, index }: { model: StudioModel; index: number }) {
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
        {model.role === 'agent' && (
          <button
            type="button"
            className="button button--small"
            data-testid={`${testId}-remove`}
            onClick={() => void studioStore.getState().removeAgent(model.slot)}
          >
            Remove
          </button>
        )}
      </div>
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
            <dt>Dtypes</dt>
            <dd data-testid={`${testId}-dtypes`}>
              {Object.entries(report.dtypes)
                .map(([dtype, n]) => `${dtype} ${formatCount(n)}`)
                .join(', ')}
            </dd>
          </div>
          <div className="facts__row">
            <dt>Tensors</dt>
            <dd data-testid={`${testId}-tensors`}>{formatCount(report.tensors.length)}</dd>
          </div>
          <div className="facts__row">
            <dt>Shards</dt>
            <dd data-testid={`${testId}-shards`}>
              {report.files.length}
              {report.sharded ? ' (indexed)' : ''}
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
      <Pickers role={model.role} slot={model.slot} testId={testId} />
    </article>
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
              {compat.issues.length} difference{compat.issues.length === 1 ? '' : 's'}: these models cannot be
              merged as they are.
            </p>
            <div className="studio-scroll">
              <table className="studio-table" data-testid="compat-issues">
                <thead>
                  <tr>
                    <th scope="col">Model</th>
                    <th scope="col">Tensor</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Detail</th>
                  </tr>
                </thead>
                <tbody>
                  {compat.issues.map((issue, i) => (
                    <tr key={i}>
                      <td>{issue.model}</td>
                      <td>
                        <code>{issue.tensor}</code>
                      </td>
                      <td>{issue.kind}</td>
                      <td>{issue.detail}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
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
      <article className="card" data-testid="engine-card">
        <h3>Engine and memory</h3>
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
            <dt>GPU buffers (≈)</dt>
            <dd data-testid="memory-gpu">
              {formatBytes(memory.gpuBytes)} ({formatCount(memory.windowElements)} elements per window)
            </dd>
          </div>
        </dl>
      </article>
    </div>
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
      <p className="muted">
        A base model and the agents fine-tuned from it. Only headers are read here; weights stay on this
        machine.
      </p>
      <div className="studio-models">
        {base ? (
          <ModelCard model={base} index={0} />
        ) : (
          <article className="card studio-model" data-testid="model-base" data-status="empty">
            <h3>Base</h3>
            <Pickers role="base" slot={null} testId="model-base" />
          </article>
        )}
        {agents.map((agent, i) => (
          <ModelCard key={agent.slot} model={agent} index={i} />
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

// Step 4: every merge of the session, in OPFS or in a folder the user picked: its name, files with
// sizes and shard checksums, the whole merge as one zip, single-file downloads (with the size a
// browser can safely hand over) and "Save to folder…" for OPFS (library merges too), the read-back
// check for a picked folder, and the mergekit recipe.
import { useState } from 'react';
import { BROWSER_SHARD_BYTES } from '../../driver/shard-sizes.ts';
import { type WrittenFile } from '../../driver/job.ts';
import { mergedFile } from '../../worker/client.ts';
import type { LibraryEntry, ReadBackFile, ReadBackReport } from '../../worker/protocol.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { storageLooksPrivate, type MergeRecord, type TaskState } from '../../state/studio-slice.ts';
import { formatBytes, formatDuration } from '../format.ts';
import { ErrorBox, idPart, ProgressBar } from '../studio/common.tsx';
import { deferred } from '../studio/deferred.tsx';
import { directoryPicker } from '../../io/browser-folders.ts';
import { ZipDownload } from './ZipDownload.tsx';

// The comparison of two merges (and the mergekit YAML reader it brings) is a chunk of its own: it has
// nothing to show before two merges exist.
const Compare = deferred<object>(() => import('../compare/ComparePanel.tsx').then((m) => m.ComparePanel));

/** Chromium cannot hold one Blob much over 2 GiB, so a download above this size may fail. */
const SAFE_DOWNLOAD_BYTES = 2 * 1024 ** 3;

async function download(folder: string, name: string): Promise<void> {
  const file = await mergedFile(folder, name);
  const url = URL.createObjectURL(file);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  // The browser has taken the URL once the click's navigation started.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function DownloadCell({
  folder,
  file,
  testId,
}: {
  folder: string;
  file: Pick<WrittenFile, 'file' | 'bytes'>;
  testId: string;
}) {
  const pick = directoryPicker();
  const oversize = file.bytes > SAFE_DOWNLOAD_BYTES;
  const noteId = `${testId}-${idPart(file.file)}-oversize`;
  return (
    <td>
      {oversize && (
        <p className="studio-oversize" id={noteId} data-testid="merged-file-oversize">
          Over {formatBytes(SAFE_DOWNLOAD_BYTES)}: the download may fail
          {pick ? '; use Save to folder… instead' : ''}.
        </p>
      )}
      <button
        type="button"
        className="button button--small button--secondary"
        data-testid="merged-file-download"
        aria-label={`Download ${file.file}`}
        aria-describedby={oversize ? noteId : undefined}
        onClick={() => void download(folder, file.file)}
      >
        {oversize ? 'Download anyway' : 'Download'}
      </button>
    </td>
  );
}

function readBackText(found: ReadBackFile | undefined): string {
  if (!found) return '…';
  if (found.foundBytes === null) return 'missing';
  if (found.foundBytes !== found.bytes) return `size differs: ${found.foundBytes} bytes`;
  if (found.sha256 !== undefined && found.foundSha256 !== found.sha256) return 'checksum differs';
  return found.sha256 !== undefined ? 'size and sha256 match' : 'size matches';
}

/** One file's read-back outcome in a picked folder. */
function ReadBackCell({ found }: { found: ReadBackFile | undefined }) {
  return (
    <td data-testid="merged-file-readback" data-ok={found ? String(found.ok) : undefined}>
      {readBackText(found)}
    </td>
  );
}

/** The read-back check of a merge in a picked folder as a whole. */
function ReadBackSummary({
  record,
  task,
  testId,
}: {
  record: MergeRecord;
  task: TaskState<ReadBackReport> | undefined;
  testId: string;
}) {
  const result = task?.result;
  const bad = result ? result.files.filter((f) => !f.ok).length : 0;
  return (
    <div
      data-testid={`${testId}-readback`}
      data-status={task?.status ?? 'idle'}
      data-ok={result ? String(result.ok) : undefined}
    >
      {task?.status === 'running' && (
        <ProgressBar
          progress={task.progress}
          testId={`${testId}-readback-progress`}
          label="Read-back progress"
        />
      )}
      {result && (
        <p role="status" className={result.ok ? 'notice' : 'notice notice--error'}>
          {result.ok
            ? `Read back from ${record.folder}: all ${result.files.length} files are there with the sizes and shard checksums the merge wrote.`
            : `Read back from ${record.folder}: ${bad} file${bad === 1 ? '' : 's'} differ${bad === 1 ? 's' : ''} from what the merge wrote${
                result.extra.length > 0 ? `; the folder also holds ${result.extra.join(', ')}` : ''
              }.`}
        </p>
      )}
      {task?.status === 'cancelled' && <p role="status">The read-back was cancelled.</p>}
      {task?.error && <ErrorBox error={task.error} testId={`${testId}-readback-error`} />}
    </div>
  );
}

/** Deletes an OPFS merge folder; the library lists it until the worker has removed it. */
function DeleteButton({ folder }: { folder: string }) {
  const failed = useStudio((s) => s.studio.deleteErrors[folder]);
  return (
    <>
      <button
        type="button"
        className="button button--danger"
        data-testid="merge-delete"
        aria-label={`Delete merges/${folder} from this browser's storage`}
        onClick={() => void studioStore.getState().deleteMerge(folder)}
      >
        Delete
      </button>
      {failed && (
        <span role="alert" className="studio-help">
          Not deleted: {failed}
        </span>
      )}
    </>
  );
}

function MergeCard({ record, deletable = false }: { record: MergeRecord; deletable?: boolean }) {
  const [copied, setCopied] = useState<string | null>(null);
  const saved = useStudio((s) => s.studio.saved[record.id]);
  const readBack = useStudio((s) => s.studio.readBack[record.id]);
  const picked = record.location === 'picked';
  const pick = picked ? undefined : directoryPicker();
  const testId = `merge-${record.id}`;
  return (
    <article
      className="card card--wide"
      data-testid={testId}
      data-folder={record.folder}
      data-location={record.location}
      aria-labelledby={`${testId}-title`}
    >
      <h3 id={`${testId}-title`}>
        Merge {record.id}: <span data-testid={`${testId}-name`}>{record.name}</span> ({record.params.method}){' '}
        <span className="muted">
          {picked ? (
            <>
              → folder <code>{record.folder}</code>
            </>
          ) : (
            <>
              → OPFS <code>merges/{record.folder}</code>
            </>
          )}
        </span>
      </h3>
      <p className="muted">
        {record.engine}; {formatDuration(record.elapsedMs)}; {record.mergedTensors} tensors merged,{' '}
        {record.copiedTensors} copied; λ = {record.lambdas.map((l) => l.toFixed(6)).join(', ')}
      </p>
      <div className="studio-scroll">
        <table className="studio-table" data-testid={`${testId}-files`}>
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col">Size</th>
              <th scope="col">sha256</th>
              <th scope="col">{picked ? 'Read back' : <span className="visually-hidden">Download</span>}</th>
            </tr>
          </thead>
          <tbody>
            {record.files.map((f) => (
              <tr key={f.file} data-testid="merged-file" data-file={f.file}>
                <th scope="row">
                  <code>{f.file}</code>
                </th>
                <td>{formatBytes(f.bytes)}</td>
                <td>
                  {f.sha256 ? (
                    <code className="studio-hash" data-testid="merged-file-sha256">
                      {f.sha256}
                    </code>
                  ) : (
                    <span className="muted">—</span>
                  )}
                </td>
                {picked ? (
                  <ReadBackCell found={readBack?.result?.files.find((r) => r.file === f.file)} />
                ) : (
                  <DownloadCell folder={record.folder} file={f} testId={testId} />
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {picked && <ReadBackSummary record={record} task={readBack} testId={testId} />}
      <div className="studio-actions">
        {!picked && <ZipDownload folder={record.folder} name={record.name} testId={testId} />}
        {pick && (
          <button
            type="button"
            className="button button--secondary"
            data-testid={`${testId}-save`}
            onClick={() =>
              void pick({ mode: 'readwrite' }).then(
                (dir) => studioStore.getState().saveMerge(record.id, dir),
                () => undefined,
              )
            }
          >
            Save to folder…
          </button>
        )}
        {picked && readBack?.status !== 'running' && (
          <button
            type="button"
            className="button button--secondary"
            data-testid={`${testId}-readback-run`}
            onClick={() => void studioStore.getState().readBackMerge(record.id)}
          >
            Read back again
          </button>
        )}
        <button
          type="button"
          className="button button--secondary"
          data-testid={`${testId}-copy-recipe`}
          onClick={() =>
            void navigator.clipboard.writeText(record.recipe).then(
              () => setCopied('Recipe copied.'),
              () => setCopied('The clipboard refused; copy the recipe from below.'),
            )
          }
        >
          Copy recipe
        </button>
        {deletable && <DeleteButton folder={record.folder} />}
        {copied && <span role="status">{copied}</span>}
        {saved && (
          <span role="status" data-testid={`${testId}-saved`}>
            {saved}
          </span>
        )}
      </div>
      <details open>
        <summary>mergekit recipe</summary>
        <pre
          className="studio-pre"
          data-testid={`${testId}-recipe`}
          // A scrollable region must take focus so keyboard users can scroll it.
          tabIndex={0}
          aria-label="mergekit recipe"
        >
          {record.recipe}
        </pre>
      </details>
    </article>
  );
}

/** Shown where there is no folder picker, so every file leaves the browser as one download. */
function DownloadLimitNotice() {
  const safe = formatBytes(SAFE_DOWNLOAD_BYTES);
  return (
    <div className="notice notice--warn" role="note" data-testid="export-download-limit">
      <p>
        This browser cannot save to a folder: Download as zip offers a whole merge as one file, built from the
        stored files without copying them into memory, or each file downloads on its own. Files up to {safe}{' '}
        download safely one by one: Chromium cannot hold one file much larger. Weights are split into shards
        of at most {formatBytes(BROWSER_SHARD_BYTES)}, and any file over {safe} is flagged before its
        download.
      </p>
    </div>
  );
}

/** "Save to folder…" for a library merge: its files copied into a folder the user picks. */
function SaveFolderButton({ folder, testId }: { folder: string; testId: string }) {
  const saved = useStudio((s) => s.studio.savedFolders[folder]);
  const pick = directoryPicker();
  if (!pick) return null;
  return (
    <>
      <button
        type="button"
        className="button button--secondary"
        data-testid={`${testId}-save`}
        onClick={() =>
          void pick({ mode: 'readwrite' }).then(
            (dir) => studioStore.getState().saveFolder(folder, dir),
            () => undefined,
          )
        }
      >
        Save to folder…
      </button>
      {saved && (
        <span role="status" data-testid={`${testId}-saved`}>
          {saved}
        </span>
      )}
    </>
  );
}

/** A merge folder found in OPFS that this session did not make (or made before a reload). */
function LibraryCard({ entry }: { entry: LibraryEntry }) {
  const testId = `library-${idPart(entry.folder)}`;
  const complete = entry.status === 'complete';
  return (
    <article className="card card--wide" aria-labelledby={`${testId}-title`}>
      <h3 id={`${testId}-title`}>
        {entry.name !== null && (
          <>
            <span data-testid="merge-card-name">{entry.name}</span>{' '}
          </>
        )}
        <code className={entry.name !== null ? 'muted' : undefined}>merges/{entry.folder}</code>{' '}
        <span className={`badge ${complete ? 'badge--ok' : 'badge--warn'}`}>
          {complete ? 'complete' : 'incomplete'}
        </span>
      </h3>
      <p className="muted">
        {entry.files.length} file{entry.files.length === 1 ? '' : 's'}, {formatBytes(entry.bytes)}
        {entry.modified > 0 ? `; last written ${new Date(entry.modified).toLocaleString()}` : ''}
      </p>
      {!complete && (
        <p className="notice notice--warn" data-testid="merge-card-reason">
          This merge did not finish ({entry.reason}): its files are not a usable model. Delete it to free the
          space.
        </p>
      )}
      {entry.files.length > 0 && (
        <div className="studio-scroll">
          <table className="studio-table" data-testid="merge-card-files">
            <thead>
              <tr>
                <th scope="col">File</th>
                <th scope="col">Size</th>
                <th scope="col">{complete ? <span className="visually-hidden">Download</span> : ''}</th>
              </tr>
            </thead>
            <tbody>
              {entry.files.map((f) => (
                <tr key={f.file} data-testid="merge-card-file" data-file={f.file}>
                  <th scope="row">
                    <code>{f.file}</code>
                  </th>
                  <td>{formatBytes(f.bytes)}</td>
                  {complete ? <DownloadCell folder={entry.folder} file={f} testId={testId} /> : <td />}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="studio-actions">
        {complete && <ZipDownload folder={entry.folder} name={entry.name ?? entry.folder} testId={testId} />}
        {complete && <SaveFolderButton folder={entry.folder} testId={testId} />}
        <DeleteButton folder={entry.folder} />
      </div>
      {entry.card && (
        <details>
          <summary>Model card (README.md)</summary>
          <pre className="studio-pre" data-testid="merge-card-readme" tabIndex={0} aria-label="model card">
            {entry.card}
          </pre>
        </details>
      )}
      {entry.recipe && (
        <details>
          <summary>mergekit recipe</summary>
          <pre className="studio-pre" tabIndex={0} aria-label="mergekit recipe">
            {entry.recipe}
          </pre>
        </details>
      )}
    </article>
  );
}

/** Storage used and the quota, and whether the browser keeps the merges when space runs short. */
function StorageLine() {
  const storage = useStudio((s) => s.studio.storage);
  const asked = useStudio((s) => s.studio.persistAsked);
  if (!storage) return null;
  const share = storage.quota > 0 ? (100 * storage.usage) / storage.quota : 0;
  return (
    <p
      className="studio-storage"
      data-testid="storage-estimate"
      data-usage={storage.usage}
      data-quota={storage.quota}
    >
      This site uses {formatBytes(storage.usage)} of {formatBytes(storage.quota)} ({share.toFixed(1)}%) of the
      browser&apos;s storage;{' '}
      {storage.persisted
        ? 'it is kept persistently.'
        : 'the browser may clear it when the disk runs short (a large merge asks to keep it).'}
      {asked === 'denied' && ' The browser declined to keep it persistently: save large merges to a folder.'}
      {storageLooksPrivate(storage) && (
        <strong data-testid="export-private-storage">
          {' '}
          A quota this small is what a private window gives: its storage is held in memory, so every merge
          kept here takes that much RAM until the window closes, and is lost then.{' '}
          {directoryPicker()
            ? 'Prefer Merge into a folder… for a large model: it writes straight to disk.'
            : 'Save a large model to disk right after merging, or use a normal window.'}
        </strong>
      )}
    </p>
  );
}

interface Listed {
  folder: string;
  status: LibraryEntry['status'];
  record: MergeRecord | undefined;
  entry: LibraryEntry | undefined;
}

/** The library's folders and this session's OPFS merges as one list, newest first. */
function listed(entries: LibraryEntry[], merges: MergeRecord[]): Listed[] {
  const opfs = merges.filter((m) => m.location === 'opfs');
  const rows: Listed[] = entries.map((entry) => ({
    folder: entry.folder,
    status: entry.status,
    entry,
    record: opfs.find((m) => m.folder === entry.folder),
  }));
  // A merge just made is listed before the library has been read again.
  const fresh = opfs
    .filter((m) => !entries.some((e) => e.folder === m.folder))
    .reverse()
    .map((record) => ({ folder: record.folder, status: 'complete' as const, entry: undefined, record }));
  return [...fresh, ...rows];
}

export function ExportPanel() {
  const merges = useStudio((s) => s.studio.merges);
  const library = useStudio((s) => s.studio.library);
  const rows = listed(library.result ?? [], merges);
  const picked = merges.filter((m) => m.location === 'picked');
  return (
    <section className="panel" aria-labelledby="export-heading" data-testid="export-panel">
      <div className="panel__head">
        <h2 id="export-heading">4. Export</h2>
      </div>
      {!directoryPicker() && <DownloadLimitNotice />}
      <StorageLine />
      {library.error && <ErrorBox error={library.error} testId="library-error" />}
      {rows.length === 0 && picked.length === 0 ? (
        <p className="muted">
          Merged models are written to this browser&apos;s private storage (OPFS), or into the folder picked
          for them, and listed here, also after a reload.
        </p>
      ) : (
        <div className="cards">
          {[...picked].reverse().map((record) => (
            <MergeCard key={`picked-${record.id}`} record={record} />
          ))}
          {rows.map((row) => (
            <div
              key={row.folder}
              className="studio-merge"
              data-testid="merge-card"
              data-folder={row.folder}
              data-status={row.status}
            >
              {row.record ? (
                <MergeCard record={row.record} deletable />
              ) : (
                row.entry && <LibraryCard entry={row.entry} />
              )}
            </div>
          ))}
        </div>
      )}
      <div className="cards">
        <Compare.View fallback={null} />
      </div>
    </section>
  );
}

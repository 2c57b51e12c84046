// The page's side of the engine worker: typed calls with progress and cancel over postMessage, the
// demo set's manifest, and File handles of merged files in OPFS (for downloads; never their bytes).
import { MERGES_FOLDER } from './protocol.ts';
import type {
  DerivationReport,
  FileRef,
  JobProgress,
  ProgressOf,
  WorkerCall,
  WorkerCalls,
  WorkerErrorInfo,
  WorkerReply,
  WorkerRequest,
} from './protocol.ts';

export type { DerivationReport };

/** A worker failure with its plain-data details (file, tensor, compat report) kept. */
export class EngineCallError extends Error {
  constructor(readonly info: WorkerErrorInfo) {
    super(info.message);
    this.name = info.name;
  }
}

export interface EngineJob<T> {
  promise: Promise<T>;
  /** Aborts the job in the worker; its promise then rejects with an AbortError. */
  cancel(): void;
}

export interface EngineClient {
  call<K extends WorkerCall>(
    kind: K,
    request: WorkerCalls[K]['request'],
    onProgress?: (progress: ProgressOf<K>) => void,
  ): EngineJob<WorkerCalls[K]['result']>;
  /** Stops the worker; pending calls reject. */
  terminate(): void;
}

interface Pending {
  resolve(result: unknown): void;
  reject(error: Error): void;
  onProgress?: (progress: JobProgress) => void;
}

/** Starts the engine worker on the first call; one worker serves every call of the page. */
export function createEngineClient(
  spawn: () => Worker = () =>
    new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: 'merge-studio-engine' }),
): EngineClient {
  let worker: Worker | null = null;
  let nextId = 1;
  const pending = new Map<number, Pending>();

  const failAll = (message: string): void => {
    for (const call of pending.values()) call.reject(new EngineCallError({ name: 'WorkerError', message }));
    pending.clear();
    worker?.terminate();
    worker = null;
  };

  const start = (): Worker => {
    if (worker) return worker;
    const created = spawn();
    created.addEventListener('message', (event: MessageEvent<WorkerReply>) => {
      const message = event.data;
      const call = pending.get(message.id);
      if (!call) return;
      if (message.kind === 'progress') call.onProgress?.(message.progress);
      else {
        pending.delete(message.id);
        if (message.kind === 'done') call.resolve(message.result);
        else call.reject(new EngineCallError(message.error));
      }
    });
    created.addEventListener('error', (event: ErrorEvent) => {
      // A module worker that fails to load reports an ErrorEvent without a message.
      failAll(
        `The engine worker stopped: ${event.message || 'its script could not be loaded or threw at start'}.`,
      );
    });
    worker = created;
    return created;
  };

  return {
    call(kind, request, onProgress) {
      const id = nextId++;
      const target = start();
      const promise = new Promise<WorkerCalls[typeof kind]['result']>((resolve, reject) => {
        // Each call's progress is of its own kind (ProgressOf), as the worker posts it.
        pending.set(id, {
          resolve: resolve as (result: unknown) => void,
          reject,
          onProgress: onProgress as ((progress: JobProgress) => void) | undefined,
        });
      });
      // A canvas handed to the engine is transferred, not copied (it cannot be cloned).
      const transfer = Object.values(request).filter(
        (v) => typeof OffscreenCanvas !== 'undefined' && v instanceof OffscreenCanvas,
      );
      target.postMessage({ ...request, kind, id } as WorkerRequest, transfer as Transferable[]);
      return {
        promise,
        cancel: () => {
          if (pending.has(id)) target.postMessage({ kind: 'cancel', id } satisfies WorkerRequest);
        },
      };
    },
    terminate() {
      failAll('The engine worker was stopped.');
    },
  };
}

export interface DemoModelRef {
  label: string;
  files: FileRef[];
}

export interface DemoSet {
  base: DemoModelRef;
  agents: DemoModelRef[];
}

interface DemoManifest {
  base: string;
  agents: string[];
  models: { name: string; path: string; files: Record<string, string> }[];
}

/** Reads public/demo/manifest.json; the worker fetches the weights from the URLs it returns. */
export async function fetchDemoSet(root = `${import.meta.env.BASE_URL}demo/`): Promise<DemoSet> {
  const response = await fetch(`${root}manifest.json`);
  if (!response.ok) throw new Error(`The demo manifest could not be loaded (${response.status}).`);
  const manifest = (await response.json()) as DemoManifest;
  const ref = (name: string): DemoModelRef => {
    const entry = manifest.models.find((m) => m.name === name);
    if (!entry) throw new Error(`The demo manifest lists ${name} but does not describe it.`);
    const base = new URL(`${root}${entry.path}/`, location.href);
    return {
      label: name,
      files: Object.keys(entry.files).map((file) => ({ name: file, url: new URL(file, base).href })),
    };
  };
  return { base: ref(manifest.base), agents: manifest.agents.map(ref) };
}

/** A merged file in OPFS as a File: a handle the browser reads lazily, e.g. for a download link. */
export async function mergedFile(folder: string, name: string): Promise<File> {
  const root = await navigator.storage.getDirectory();
  const merges = await root.getDirectoryHandle(MERGES_FOLDER);
  const dir = await merges.getDirectoryHandle(folder);
  return (await dir.getFileHandle(name)).getFile();
}

/** Every file of a merge folder in OPFS, sorted by name (swap files of a write in progress left out). */
export async function mergedFiles(folder: string): Promise<File[]> {
  const root = await navigator.storage.getDirectory();
  const dir = await (await root.getDirectoryHandle(MERGES_FOLDER)).getDirectoryHandle(folder);
  const files: File[] = [];
  for await (const handle of dir.values())
    if (handle.kind === 'file' && !handle.name.endsWith('.crswap'))
      files.push(await (handle as FileSystemFileHandle).getFile());
  return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

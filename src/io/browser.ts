// Browser byte sources and output folders: lazy File/Blob range reads, and folders behind a
// FileSystemDirectoryHandle (a picked folder or OPFS) written through createWritable streams, or,
// for new files in OPFS from a worker, through synchronous access handles.
// Browser APIs are only touched inside functions, so Node can import this module for tests.

import { asReadFailed, SafetensorsError } from './errors.ts';
import { checkFileName, sinkClosed, type ByteSink, type FolderSink } from './sink.ts';
import { readTarget, type ByteSource, type ModelFile } from './source.ts';

/** Bytes a BYOB read of a Blob's stream is given at a time: the pieces it hands over are at most 2 MiB. */
const PIECE_BYTES = 2 << 20;

/**
 * How long one piece of a BYOB read may take before the read goes on through `arrayBuffer()`.
 * Chromium 156 sometimes leaves a worker's BYOB read pending for good (reading a 1.33 GiB set in 16 MiB
 * windows, it stalled within the first two to five passes in each of six attempts); the same loop
 * with a timer beside each piece never did, in 8 passes.
 */
export const STALL_MS = 2000;

/** Scratch buffers of PIECE_BYTES for BYOB reads, reused: a fresh buffer costs its page faults again. */
const scratch: ArrayBuffer[] = [];

/**
 * Whether BYOB reads of Blob streams are in use: not where the stream is no byte stream, and no more
 * once one stalled (the rest of that read and every later one go through `arrayBuffer()`).
 */
let byob = typeof ReadableStreamBYOBReader === 'function';

/** Test aid: use BYOB reads again (they stop after a stall), or not. */
export function useByobReads(on: boolean): void {
  byob = on && typeof ReadableStreamBYOBReader === 'function';
}

/** `promise`, or 'stalled' once `ms` pass without it settling. */
async function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | 'stalled'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), ms)));
  try {
    return await Promise.race([promise, stalled]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads the whole of `blob` into `target` (as long as the blob) through a BYOB reader and a reused
 * scratch buffer, and returns how many bytes came: the bytes land in memory already touched, where
 * `arrayBuffer()` makes a new buffer per read (in a worker on the 2-core VM, 3.7 CPU-s per GiB,
 * mostly the page faults of its fresh memory, against 1.0 this way). Falls back to `arrayBuffer()`
 * where the stream is no byte stream and for the rest of a read whose piece stalls.
 */
async function readBlobInto(blob: Blob, target: Uint8Array, stallMs: number): Promise<number> {
  let reader: ReadableStreamBYOBReader | null = null;
  if (byob) {
    try {
      reader = blob.stream().getReader({ mode: 'byob' });
    } catch {
      byob = false;
    }
  }
  let n = 0;
  if (reader) {
    let buffer = scratch.pop() ?? new ArrayBuffer(PIECE_BYTES);
    let ended = false;
    try {
      for (;;) {
        const got = await withinMs(reader.read(new Uint8Array(buffer)), stallMs);
        if (got === 'stalled') {
          // The piece's buffer went with the pending read (finally leaves it out of the pool).
          byob = false;
          break;
        }
        // A read hands the scratch back in a new ArrayBuffer: the same memory, the old one detached.
        if (got.value) buffer = got.value.buffer as ArrayBuffer;
        ended = got.done;
        if (got.done) return n;
        const piece = got.value;
        if (n + piece.byteLength > target.byteLength) return n + piece.byteLength;
        target.set(piece, n);
        n += piece.byteLength;
      }
    } finally {
      // A stream left before its end (stalled, too long, failed) is cancelled, letting its read go.
      if (!ended) reader.cancel().catch(() => undefined);
      // A detached buffer (its read still pending) has no bytes left to reuse.
      if (buffer.byteLength > 0) scratch.push(buffer);
    }
  }
  const rest = new Uint8Array(await blob.slice(n).arrayBuffer());
  if (n + rest.byteLength <= target.byteLength) target.set(rest, n);
  return n + rest.byteLength;
}

/**
 * Reads ranges with `blob.slice(a, b)`, never the whole blob: through a BYOB reader into the caller's
 * buffer where one is given (readBlobInto). `stallMs`: test aid (STALL_MS).
 */
export function blobSource(blob: Blob, name?: string, stallMs = STALL_MS): ByteSource {
  const label = name ?? (typeof (blob as Partial<File>).name === 'string' ? (blob as File).name : 'blob');
  const size = blob.size;
  return {
    name: label,
    size,
    async read(offset, length, into) {
      const target = readTarget(label, size, offset, length, into);
      let got: number;
      try {
        got = await readBlobInto(blob.slice(offset, offset + length), target, stallMs);
      } catch (error) {
        throw asReadFailed(label, error, `bytes ${offset}..${offset + length}`);
      }
      if (got !== length) {
        throw new SafetensorsError(
          'ReadFailed',
          label,
          `got ${got} of ${length} bytes at offset ${offset}: the file changed since it was chosen. Choose it again.`,
        );
      }
      return target;
    },
  };
}

async function fileHandles(dir: FileSystemDirectoryHandle): Promise<FileSystemFileHandle[]> {
  const handles: FileSystemFileHandle[] = [];
  for await (const handle of dir.values()) {
    // Chromium's in-progress swap files (NAME.crswap) are not files of the folder.
    if (handle.kind === 'file' && !handle.name.endsWith('.crswap')) handles.push(handle);
  }
  return handles.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function isNotFound(error: unknown): boolean {
  return error instanceof Error && error.name === 'NotFoundError';
}

/** The part of FileSystemSyncAccessHandle (WebWorker only) that the sink uses. */
interface SyncAccess {
  write(data: Uint8Array, options: { at: number }): number;
  truncate(size: number): void;
  flush(): void;
  close(): void;
}

type SyncCapableHandle = FileSystemFileHandle & { createSyncAccessHandle?: () => Promise<SyncAccess> };

/**
 * A new OPFS file written in place through a synchronous access handle: each chunk goes straight to
 * the file, without createWritable's stream, swap file and copies. The name shows while it is
 * written; a merge folder in OPFS is complete only once its model card is written, so that is safe.
 */
function syncAccessSink(dir: FileSystemDirectoryHandle, fileName: string, access: SyncAccess): ByteSink {
  let position = 0;
  let active = true;
  return {
    async write(chunk) {
      if (!active) throw sinkClosed(fileName);
      // A partial write means the storage is full or gone: say so rather than leave a hole.
      const written = access.write(chunk, { at: position });
      if (written !== chunk.byteLength)
        throw new SafetensorsError(
          'WriteMismatch',
          fileName,
          `wrote ${written} of ${chunk.byteLength} bytes at offset ${position}: the browser's storage is full or unavailable.`,
        );
      position += written;
    },
    async close() {
      if (!active) throw sinkClosed(fileName);
      active = false;
      try {
        access.flush();
      } finally {
        access.close();
      }
    },
    async abort() {
      if (!active) return;
      active = false;
      access.close();
      await dir.removeEntry(fileName).catch(() => undefined);
    },
  };
}

export interface DirectoryFolderOptions {
  /**
   * Write new files through synchronous access handles (only OPFS, only in a dedicated worker):
   * much faster than createWritable there. Existing files are still replaced through createWritable.
   */
  syncAccess?: boolean;
}

/**
 * A folder behind a directory handle. createWritable writes to a swap file and replaces the target
 * atomically on close; a file that did not exist before is removed again on abort.
 */
export function directoryHandleFolder(
  dir: FileSystemDirectoryHandle,
  options: DirectoryFolderOptions = {},
): FolderSink {
  return {
    name: dir.name,
    async create(fileName) {
      checkFileName(dir.name, fileName);
      const existed = await dir.getFileHandle(fileName).then(
        () => true,
        (error: unknown) => {
          if (isNotFound(error)) return false;
          throw error;
        },
      );
      const handle = await dir.getFileHandle(fileName, { create: true });
      const sync = (handle as SyncCapableHandle).createSyncAccessHandle;
      if (options.syncAccess && !existed && sync) {
        const access = await sync.call(handle);
        access.truncate(0);
        return syncAccessSink(dir, fileName, access);
      }
      const writable = await handle.createWritable();
      let active = true;
      const sink: ByteSink = {
        async write(chunk) {
          if (!active) throw sinkClosed(fileName);
          // The stream takes only ArrayBuffer-backed views; a shared-memory chunk is copied.
          const data =
            chunk.buffer instanceof ArrayBuffer ? (chunk as Uint8Array<ArrayBuffer>) : chunk.slice();
          await writable.write(data);
        },
        async close() {
          if (!active) throw sinkClosed(fileName);
          active = false;
          try {
            await writable.close();
          } catch (error) {
            // A rejected close (e.g. a safe-browsing check) discards the data but not a new empty entry.
            if (!existed) await dir.removeEntry(fileName).catch(() => undefined);
            throw error;
          }
        },
        async abort() {
          if (!active) return;
          active = false;
          await writable.abort();
          if (!existed) await dir.removeEntry(fileName).catch(() => undefined);
        },
      };
      return sink;
    },
    async open(fileName) {
      checkFileName(dir.name, fileName);
      try {
        const file = await (await dir.getFileHandle(fileName)).getFile();
        return blobSource(file, fileName);
      } catch (error) {
        throw asReadFailed(fileName, error, 'the file');
      }
    },
    async remove(fileName) {
      checkFileName(dir.name, fileName);
      await dir.removeEntry(fileName).catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
    },
    async list() {
      return (await fileHandles(dir)).map((handle) => handle.name);
    },
  };
}

/** The top-level files of a picked folder, each read lazily. */
export async function directoryHandleFiles(dir: FileSystemDirectoryHandle): Promise<ModelFile[]> {
  const handles = await fileHandles(dir);
  return Promise.all(
    handles.map(async (handle) => ({
      name: handle.name,
      source: blobSource(await handle.getFile(), handle.name),
    })),
  );
}

/** A picked input file as it was when opened: its size and, for a file from disk, its modification time. */
export interface FileSnapshot {
  name: string;
  blob: Blob;
  size: number;
  /** null for a blob that is no file on disk (a fetched demo file), which cannot change. */
  lastModified: number | null;
}

export function fileSnapshot(name: string, blob: Blob): FileSnapshot {
  const lastModified = (blob as Partial<File>).lastModified;
  return {
    name,
    blob,
    size: blob.size,
    lastModified: typeof lastModified === 'number' ? lastModified : null,
  };
}

/** An input file that changed on disk after it was chosen; `model` is the model's label. */
export class InputChangedError extends Error {
  override name = 'InputChanged';
  constructor(
    readonly model: string,
    readonly file: string,
    detail: string,
  ) {
    super(
      `${model}: ${file} changed after it was chosen (${detail}), so the merge was not kept. Choose ${model} again.`,
    );
  }
}

/**
 * Throws an InputChangedError naming the model and file when an input file changed since it was
 * opened. A File from a picker or a drop is a snapshot: browsers refuse to read it once the file on
 * disk has another size or modification time, so reading one byte of it is the check. `current`
 * gives the file as it is now where a handle allows getting it again.
 */
export async function checkUnchanged(
  model: string,
  files: readonly FileSnapshot[],
  current?: (name: string) => Promise<Blob | null>,
): Promise<void> {
  for (const before of files) {
    if (before.lastModified === null) continue;
    const was = `it had ${before.size} bytes, modified ${new Date(before.lastModified).toISOString()}`;
    const now = current ? await current(before.name) : before.blob;
    if (!now) throw new InputChangedError(model, before.name, `${was}; now it is gone`);
    const modified = (now as Partial<File>).lastModified;
    if (now.size !== before.size || (typeof modified === 'number' && modified !== before.lastModified))
      throw new InputChangedError(
        model,
        before.name,
        `${was}; now ${now.size} bytes, modified ${new Date(modified ?? 0).toISOString()}`,
      );
    try {
      await now.slice(0, Math.min(1, now.size)).arrayBuffer();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new InputChangedError(model, before.name, `${was}; reading it now fails: ${reason}`);
    }
  }
}

// Byte sinks and output folders: where merged shards, the index and side files are written, with a
// file appearing under its name only once it is complete (memory, browser handles, Node fs).

import { SafetensorsError } from './errors.ts';
import { memorySource, type ByteSource } from './source.ts';

export interface ByteSink {
  /** Appends a chunk; the sink is done with `chunk` once the promise resolves (the caller may reuse it). */
  write(chunk: Uint8Array): Promise<void>;
  /** Commits the file: only now does it appear under its name (where the platform allows). */
  close(): Promise<void>;
  /** Discards everything written; the folder is left as if create() had not been called. */
  abort(): Promise<void>;
}

export interface FolderSink {
  readonly name: string;
  /** A new file, replacing any of that name once closed. */
  create(fileName: string): Promise<ByteSink>;
  open(fileName: string): Promise<ByteSource>;
  /** Removes a file; a file that is not there is not an error. */
  remove(fileName: string): Promise<void>;
  /** Names of the complete files, sorted. */
  list(): Promise<string[]>;
}

/**
 * Rejects anything but a plain file name, so no index entry or tensor name can reach outside the
 * folder: no separators, no `..`, no drive letters or URL schemes, no control characters.
 */
export function checkFileName(folder: string, fileName: string): void {
  const unsafe =
    fileName === '' ||
    fileName === '.' ||
    fileName.includes('/') ||
    fileName.includes('\\') ||
    fileName.includes('..') ||
    fileName.includes(':') ||
    /\p{Cc}/u.test(fileName);
  if (unsafe) {
    throw new SafetensorsError(
      'UnsafePath',
      folder,
      `refusing the file name ${JSON.stringify(fileName)}: only plain names inside the folder are allowed.`,
    );
  }
}

/** Each sink is finished once: after close() or abort() it refuses writes. */
export function sinkClosed(file: string): SafetensorsError {
  return new SafetensorsError(
    'WriteMismatch',
    file,
    'write after close() or abort(): create the file again.',
  );
}

/**
 * A sink that writes behind its caller: write() returns once the chunk is queued, and waits only
 * while more than `limit` bytes are queued, so the caller's next work (reading and merging the next
 * tensor) runs while the file system writes. Chunks reach `sink` in call order, one write at a time.
 * The caller hands each chunk over: it must not change it afterwards. A failed write fails the next
 * write() or close() with its error, and nothing queued after it is written; close() and abort() wait
 * for the queue, so no write lands after either.
 */
export function writeBehind(sink: ByteSink, limit: number): ByteSink {
  let tail: Promise<void> = Promise.resolve();
  let queued = 0;
  let failure: { error: unknown } | null = null;
  const pending: Promise<void>[] = [];
  const check = (): void => {
    if (failure) throw failure.error;
  };
  return {
    async write(chunk) {
      check();
      queued += chunk.length;
      const done = tail
        .then(() => (failure ? undefined : sink.write(chunk)))
        .then(
          () => {
            queued -= chunk.length;
          },
          (error: unknown) => {
            queued -= chunk.length;
            failure ??= { error };
          },
        );
      tail = done;
      pending.push(done);
      void done.then(() => pending.splice(pending.indexOf(done), 1));
      while (queued > limit && !failure && pending.length > 0) await pending[0];
      check();
    },
    async close() {
      await tail;
      check();
      await sink.close();
    },
    async abort() {
      await tail;
      await sink.abort();
    },
  };
}

/** An in-memory folder for tests and the demo; `files` holds the committed files. */
export function memoryFolder(name: string): FolderSink & { files: Map<string, Uint8Array> } {
  const files = new Map<string, Uint8Array>();
  return {
    name,
    files,
    async create(fileName) {
      checkFileName(name, fileName);
      let chunks: Uint8Array[] | undefined = [];
      return {
        async write(chunk) {
          if (!chunks) throw sinkClosed(fileName);
          chunks.push(chunk.slice());
        },
        async close() {
          if (!chunks) throw sinkClosed(fileName);
          files.set(fileName, concatBytes(chunks));
          chunks = undefined;
        },
        async abort() {
          chunks = undefined;
        },
      };
    },
    async open(fileName) {
      checkFileName(name, fileName);
      const bytes = files.get(fileName);
      if (!bytes) throw new SafetensorsError('ReadFailed', fileName, `no such file in ${name}.`);
      return memorySource(fileName, bytes);
    },
    async remove(fileName) {
      checkFileName(name, fileName);
      files.delete(fileName);
    },
    async list() {
      return [...files.keys()].sort();
    },
  };
}

export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const chunk of chunks) total += chunk.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

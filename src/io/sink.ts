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

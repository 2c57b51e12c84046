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
 * Memory for chunks queued by writeBehind, reused from chunk to chunk: on the CI VM a copy into memory
 * touched before runs at 15 GB/s and one into a new allocation at 0.33 GB/s (page faults), so each
 * queued chunk is copied into a buffer given back here once written. Chunks under `small` bytes are
 * copied into new memory (the allocator's heap reuses it anyway). Free buffers are kept up to `keep`
 * bytes plus the largest one; a chunk takes a free buffer at most twice its size.
 */
export class ChunkPool {
  private readonly free: Uint8Array[] = [];
  private kept = 0;
  private largest = 0;
  /** Buffers made new, for tests and the bench. */
  allocated = 0;

  constructor(
    private readonly keep: number,
    /** Chunks below this many bytes are copied into new memory, not into the pool's. */
    readonly small = 1 << 16,
  ) {}

  /** A copy of `chunk` and the buffer that holds it, to give back once the copy is written. */
  copy(chunk: Uint8Array): { bytes: Uint8Array; buffer: Uint8Array | null } {
    if (chunk.length < this.small) return { bytes: chunk.slice(), buffer: null };
    let best = -1;
    for (const [i, b] of this.free.entries())
      if (
        b.length >= chunk.length &&
        b.length <= 2 * chunk.length &&
        (best < 0 || b.length < this.free[best]!.length)
      )
        best = i;
    let buffer: Uint8Array;
    if (best >= 0) {
      buffer = this.free.splice(best, 1)[0]!;
      this.kept -= buffer.length;
    } else {
      buffer = new Uint8Array(chunk.length);
      this.allocated += 1;
      this.largest = Math.max(this.largest, buffer.length);
    }
    const bytes = buffer.subarray(0, chunk.length);
    bytes.set(chunk);
    return { bytes, buffer };
  }

  give(buffer: Uint8Array | null): void {
    if (!buffer || this.kept + buffer.length > this.keep + this.largest) return;
    this.free.push(buffer);
    this.kept += buffer.length;
  }
}

/**
 * A sink that writes behind its caller: write() returns once the chunk is queued, and waits only
 * while more than `limit` bytes are queued, so the caller's next work (reading and merging the next
 * tensor) runs while the file system writes. Chunks reach `sink` in call order, one write at a time.
 * Like any sink it is done with the caller's chunk once write() resolves: a queued chunk is a copy in
 * `pool`'s memory, and a chunk over the limit (waited for anyway) is written from the caller's. A
 * failed write fails the next write() or close() with its error, and nothing queued after it is
 * written; close() and abort() wait for the queue, so no write lands after either.
 */
export function writeBehind(sink: ByteSink, limit: number, pool = new ChunkPool(limit)): ByteSink {
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
      const { bytes, buffer } = chunk.length > limit ? { bytes: chunk, buffer: null } : pool.copy(chunk);
      queued += bytes.length;
      const done = tail
        .then(() => (failure ? undefined : sink.write(bytes)))
        .then(
          () => {
            queued -= bytes.length;
            pool.give(buffer);
          },
          (error: unknown) => {
            queued -= bytes.length;
            pool.give(buffer);
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

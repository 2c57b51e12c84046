// Node's byte sources and output folders over fs.promises, for the CLI and tests: positional reads
// into caller buffers, and files written as `<name>.partial` then renamed into place on close.

import { constants } from 'node:fs';
import {
  lstat,
  mkdir,
  open,
  readdir,
  realpath,
  rename,
  stat,
  unlink,
  type FileHandle,
} from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Sha256 } from './sha256.ts';
import { asReadFailed, SafetensorsError } from './errors.ts';
import { checkFileName, sinkClosed, type ByteSink, type FolderSink } from './sink.ts';
import { readTarget, type ByteSource, type ModelFile } from './source.ts';

export type NodeFileSource = ByteSource & { close(): Promise<void> };

const PARTIAL = '.partial';
/** One fs read call at most this long: Node refuses reads over 2 GiB. */
const MAX_READ = 1 << 30;

/** Opens the file now; close() releases the handle. */
export async function nodeFileSource(path: string): Promise<NodeFileSource> {
  let handle: FileHandle;
  let size: number;
  try {
    handle = await open(path, constants.O_RDONLY);
    size = (await handle.stat()).size;
  } catch (error) {
    throw asReadFailed(path, error, 'the file');
  }
  return handleSource(
    path,
    size,
    (use) => use(handle),
    async () => handle.close(),
  );
}

/**
 * Most files the lazy sources hold open at once. A sharded base and agents can be hundreds of files
 * (3 × 120 shards passed `ulimit -n 300`): past this, the least recently used idle handle is closed
 * and reopened when read again.
 */
export const MAX_OPEN_FILES = 32;

interface PooledFile {
  path: string;
  opening?: Promise<FileHandle>;
  /** Reads in flight: a busy handle is never closed. */
  busy: number;
}

/** Open pooled files, least recently used first (a Map keeps insertion order). */
const openFiles = new Map<PooledFile, true>();
/** Pooled files open or being opened: never more than MAX_OPEN_FILES. */
let slots = 0;
/** Opens waiting for a slot; woken to look again whenever a file closes or goes idle. */
let waiting: (() => void)[] = [];

function wake(): void {
  const woken = waiting;
  waiting = [];
  for (const resume of woken) resume();
}

async function closePooled(entry: PooledFile): Promise<void> {
  const pending = entry.opening;
  if (!pending) return;
  entry.opening = undefined;
  openFiles.delete(entry);
  const file = await pending.catch(() => undefined);
  if (!file) return;
  slots--;
  wake();
  await file.close().catch(() => undefined);
}

async function openPooled(entry: PooledFile): Promise<FileHandle> {
  while (slots >= MAX_OPEN_FILES) {
    const idle = [...openFiles.keys()].find((e) => e.busy === 0);
    if (idle) await closePooled(idle);
    // Every open file is being read: wait until one is done with.
    else await new Promise<void>((resolve) => waiting.push(resolve));
  }
  slots++;
  try {
    const file = await open(entry.path, constants.O_RDONLY);
    openFiles.set(entry, true);
    return file;
  } catch (error) {
    slots--;
    wake();
    throw error;
  }
}

async function withPooled<T>(entry: PooledFile, use: (file: FileHandle) => Promise<T>): Promise<T> {
  entry.busy++;
  try {
    // Set synchronously, so concurrent reads of one file share one open.
    const opening = (entry.opening ??= openPooled(entry));
    opening.catch(() => {
      if (entry.opening === opening) entry.opening = undefined;
    });
    const file = await opening;
    if (openFiles.delete(entry)) openFiles.set(entry, true);
    return await use(file);
  } finally {
    entry.busy--;
    if (entry.busy === 0) wake();
  }
}

/** A source that opens its file on first read, so listing a folder holds no handles. */
function lazyFileSource(path: string, size: number): NodeFileSource {
  const entry: PooledFile = { path, busy: 0 };
  return handleSource(
    path,
    size,
    (use) => withPooled(entry, use),
    () => closePooled(entry),
  );
}

/** `path` names the file in errors (a bare shard name is the same in the base and every agent). */
function handleSource(
  path: string,
  size: number,
  withFile: <T>(use: (file: FileHandle) => Promise<T>) => Promise<T>,
  close: () => Promise<void>,
): NodeFileSource {
  const name = basename(path);
  return {
    name,
    size,
    async read(offset, length, into) {
      const target = readTarget(path, size, offset, length, into);
      try {
        await withFile(async (file) => {
          let done = 0;
          while (done < length) {
            const want = Math.min(length - done, MAX_READ);
            const { bytesRead } = await file.read(target, done, want, offset + done);
            if (bytesRead === 0) {
              throw new SafetensorsError(
                'ReadFailed',
                path,
                `the file ended at byte ${offset + done}, before the ${size} bytes it had when opened: it changed while being read. Open it again.`,
              );
            }
            done += bytesRead;
          }
        });
      } catch (error) {
        throw asReadFailed(path, error, `bytes ${offset}..${offset + length}`);
      }
      return target;
    },
    close,
  };
}

/** A folder on disk, created (with parents) on first write. */
export function nodeFolder(dir: string): FolderSink {
  return {
    name: basename(dir),
    async create(fileName) {
      checkFileName(dir, fileName);
      await mkdir(dir, { recursive: true });
      const finalPath = join(dir, fileName);
      const partialPath = finalPath + PARTIAL;
      const handle = await open(partialPath, 'w');
      let active = true;
      const finish = async (): Promise<void> => {
        active = false;
        await handle.close();
      };
      const sink: ByteSink = {
        async write(chunk) {
          if (!active) throw sinkClosed(fileName);
          let done = 0;
          while (done < chunk.length) {
            const { bytesWritten } = await handle.write(chunk, done, chunk.length - done);
            done += bytesWritten;
          }
        },
        async close() {
          if (!active) throw sinkClosed(fileName);
          // Flushed before the rename, so the name never points at a file a crash could leave short.
          await handle.datasync();
          await finish();
          await rename(partialPath, finalPath);
        },
        async abort() {
          if (active) await finish();
          await unlink(partialPath).catch(ignoreMissing);
        },
      };
      return sink;
    },
    async open(fileName) {
      checkFileName(dir, fileName);
      const path = join(dir, fileName);
      let size: number;
      try {
        size = (await stat(path)).size;
      } catch (error) {
        throw asReadFailed(fileName, error, 'the file');
      }
      return oneShotSource(path, size);
    },
    async remove(fileName) {
      checkFileName(dir, fileName);
      await unlink(join(dir, fileName)).catch(ignoreMissing);
    },
    async list() {
      const entries = await readdir(dir, { withFileTypes: true }).catch((error: unknown) => {
        if (isMissing(error)) return [];
        throw error;
      });
      return entries
        .filter((entry) => entry.isFile() && !entry.name.endsWith(PARTIAL))
        .map((entry) => entry.name)
        .sort();
    },
  };
}

/** Opens the file for each read, so a source handed out by FolderSink.open never leaks a handle. */
function oneShotSource(path: string, size: number): ByteSource {
  const name = basename(path);
  return {
    name,
    size,
    async read(offset, length, into) {
      const source = lazyFileSource(path, size);
      try {
        return await source.read(offset, length, into);
      } finally {
        await source.close();
      }
    },
  };
}

/**
 * PATH is one file (the model is that file) or a folder (its top-level files, symlinks followed, as
 * in the Hugging Face cache). Files open lazily; close each source when done.
 */
export async function nodeModelFiles(path: string): Promise<(ModelFile & { source: NodeFileSource })[]> {
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    throw asReadFailed(path, error, 'the model path');
  }
  if (info.isFile()) return [{ name: basename(path), source: lazyFileSource(path, info.size) }];
  if (!info.isDirectory()) {
    throw new SafetensorsError(
      'ReadFailed',
      path,
      'is neither a file nor a folder. Give a .safetensors file or a model folder.',
    );
  }
  const names = (await readdir(path)).sort();
  const files: (ModelFile & { source: NodeFileSource })[] = [];
  const folder = await realpath(path);
  for (const name of names) {
    const full = join(path, name);
    const entry = await stat(full).catch(() => undefined);
    if (entry?.isFile()) {
      const isLink = (await lstat(full)).isSymbolicLink();
      const link = isLink ? await linkOf(full, folder) : undefined;
      files.push({ name, source: lazyFileSource(full, entry.size), ...(link && { link }) });
    } else if (MODEL_READS.test(name)) {
      // The reader needs these names: say what they are, not later that they are "missing".
      throw new SafetensorsError(
        'ReadFailed',
        full,
        `is ${await notAFile(full, entry)}, not a regular file.`,
      );
    }
  }
  return files;
}

/** The names the model reader opens: weights, their index and config.json. */
const MODEL_READS = /(\.safetensors|\.safetensors\.index\.json|^config\.json)$/;

/** What an entry that is not a regular file is, in words. */
async function notAFile(full: string, entry: Awaited<ReturnType<typeof stat>> | undefined): Promise<string> {
  if (!entry) {
    const link = await lstat(full).catch(() => undefined);
    return link?.isSymbolicLink() ? 'a symbolic link to nothing (its target does not exist)' : 'unreadable';
  }
  if (entry.isDirectory()) return 'a folder';
  if (entry.isFIFO()) return 'a named pipe (FIFO)';
  if (entry.isCharacterDevice() || entry.isBlockDevice()) return 'a device';
  if (entry.isSocket()) return 'a socket';
  return 'not a file';
}

const inside = (dir: string, path: string): boolean => {
  const rel = relative(dir, path);
  return rel !== '' && !isAbsolute(rel) && rel !== '..' && !rel.startsWith(`..${sep}`);
};

/**
 * A symbolic link's target and whether it stays inside the model folder, or, for a folder of the
 * Hugging Face cache (`models--ORG--NAME/snapshots/REV/`), inside that repository's `blobs/`.
 */
async function linkOf(full: string, folder: string): Promise<{ target: string; contained: boolean }> {
  const target = await realpath(full);
  const snapshots = dirname(folder);
  const hfBlobs = basename(snapshots) === 'snapshots' ? join(dirname(snapshots), 'blobs') : undefined;
  return { target, contained: inside(folder, target) || (hfBlobs !== undefined && inside(hfBlobs, target)) };
}

function isMissing(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ENOENT';
}

function ignoreMissing(error: unknown): void {
  if (!isMissing(error)) throw error;
}

/** A file as it was when opened: a later size or mtime that differs means it was rewritten. */
export interface FileIdentity {
  path: string;
  size: number;
  mtimeNs: bigint;
}

export async function fileIdentity(path: string): Promise<FileIdentity> {
  try {
    const info = await stat(path, { bigint: true });
    return { path, size: Number(info.size), mtimeNs: info.mtimeNs };
  } catch (error) {
    throw asReadFailed(path, error, 'the file');
  }
}

/** Throws, naming the file, if any file's size or mtime is no longer what it was when opened. */
export async function checkUnchanged(files: readonly FileIdentity[]): Promise<void> {
  for (const before of files) {
    const now = await fileIdentity(before.path).catch(() => undefined);
    if (now && now.size === before.size && now.mtimeNs === before.mtimeNs) continue;
    const what = !now
      ? 'was removed'
      : now.size !== before.size
        ? `changed size from ${before.size} to ${now.size} bytes`
        : 'was modified';
    throw new SafetensorsError(
      'ReadFailed',
      before.path,
      `${what} during the merge, so the output would match neither its old nor its new contents; ` +
        'nothing was published. Run the merge again once the file is final.',
    );
  }
}

/**
 * Reads and hashes one whole file on a worker thread. A GPU merge's main thread is its critical path
 * (reads, uploads and writes are issued there): on an H200 a RAM merge's stage times added up to its
 * wall time, and hashing its 1.33 GiB there took ~0.9 s of 2.9 s even at Node's native speed. Node
 * built-ins alone, so the eval'd worker needs no TypeScript loader.
 */
const HASH_FILE_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { closeSync, openSync, readSync } = require('node:fs');
const hash = createHash('sha256');
const fd = openSync(workerData, 'r');
try {
  const chunk = Buffer.allocUnsafe(8 << 20);
  for (let n; (n = readSync(fd, chunk, 0, chunk.length, null)) > 0; ) hash.update(chunk.subarray(0, n));
} finally {
  closeSync(fd);
}
parentPort.postMessage(hash.digest('hex'));
`;

/**
 * Hash on a worker thread only with cores to spare: on this project's 2-core machine the worker took
 * CPU from SwiftShader's threads, and the CLI's RAM merge of 668 MiB measured 5.6–6.9 s against
 * 4.7–6.7 s with the hash on the main thread (four runs each, interleaved).
 */
export const HASH_ON_THREAD = availableParallelism() >= 4;

/** The file's SHA-256 (hex), on a worker thread or streamed on this one; a failure names the file. */
export function sha256File(path: string, onThread = HASH_ON_THREAD): Promise<string> {
  return onThread ? sha256OnThread(path) : sha256Streamed(path);
}

function sha256OnThread(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(HASH_FILE_WORKER, { eval: true, workerData: path });
    let digest: string | undefined;
    worker.once('message', (hex: string) => (digest = hex));
    worker.once('error', (error) => reject(asReadFailed(path, error, 'the file')));
    worker.once('exit', (code) =>
      digest !== undefined && code === 0
        ? resolve(digest)
        : reject(asReadFailed(path, new Error(`the hashing thread exited with code ${code}`), 'the file')),
    );
  });
}

/** Streaming sha256 of a whole file on this thread, one chunk in memory at a time. */
async function sha256Streamed(path: string): Promise<string> {
  const hash = new Sha256();
  const handle = await open(path, constants.O_RDONLY).catch((error: unknown) => {
    throw asReadFailed(path, error, 'the file');
  });
  try {
    const chunk = new Uint8Array(8 << 20);
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      hash.update(chunk.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
  return hash.hex();
}

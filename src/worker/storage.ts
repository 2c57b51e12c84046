// The engine worker's output places: the OPFS merges folder (claimed names, the folders being
// written, the quota check) and folders the user picked (permission and emptiness checks).
import { formatBytes } from '../format/inspect.ts';
import { refusal } from './errors.ts';
import { MERGES_FOLDER } from './protocol.ts';

/** OPFS folders a merge is writing now: the library must not delete them under the merge. */
export const writing = new Set<string>();

export async function mergesRoot(): Promise<FileSystemDirectoryHandle> {
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle(MERGES_FOLDER, { create: true });
}

/**
 * Creates the merge's OPFS subfolder, refusing a name that exists: OPFS has no exclusive create, so
 * the page makes names that cannot collide and this catches the one that does anyway.
 */
export async function claimFolder(
  root: FileSystemDirectoryHandle,
  folder: string,
): Promise<FileSystemDirectoryHandle> {
  const exists = await root.getDirectoryHandle(folder).then(
    () => true,
    (error: unknown) => {
      if (error instanceof Error && error.name === 'NotFoundError') return false;
      throw error;
    },
  );
  if (exists || writing.has(folder))
    throw refusal(
      'FolderExists',
      `merges/${folder} exists already, so nothing was merged into it: merge again.`,
    );
  return root.getDirectoryHandle(folder, { create: true });
}

/** Refuses a merge into OPFS that the browser's storage quota cannot hold, before any work. */
export function checkStorage(storage: { usage: number; quota: number }, needed: number): void {
  const free = Math.max(0, storage.quota - storage.usage);
  if (needed <= free) return;
  throw refusal(
    'InsufficientStorage',
    `The merge needs about ${formatBytes(needed)} of browser storage, but only ${formatBytes(free)} is free ` +
      `(quota ${formatBytes(storage.quota)}, ${formatBytes(storage.usage)} used), so nothing was written. ` +
      'Delete merges from the library, or use Merge into a folder… to write to disk.',
  );
}

/** Whether `error`, or an error it wraps (the driver wraps write failures), is the browser's quota refusal. */
export function isQuotaError(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++)
    if (e.name === 'QuotaExceededError') return true;
  return false;
}

/**
 * What the page shows when a write into OPFS hits the quota mid-merge (the estimate before it was
 * short, or another tab wrote meanwhile), in place of the platform's own text: the numbers from
 * navigator.storage.estimate() now, and what the merge needed.
 */
export function quotaFull(
  storage: { usage: number; quota: number } | undefined,
  needed: number,
  cause?: unknown,
): Error {
  const numbers = storage
    ? `${formatBytes(storage.usage)} of ${formatBytes(storage.quota)} used, ${formatBytes(Math.max(0, storage.quota - storage.usage))} free`
    : 'the browser gives no estimate of its use';
  const error = refusal(
    'QuotaFull',
    `Browser storage quota full: the merge needs about ${formatBytes(needed)} (${numbers}), so it stopped and its files were removed. ` +
      'Delete merges from the library, or use Merge into a folder… to write to disk.',
  );
  if (cause !== undefined) error.cause = cause;
  return error;
}

type PermissionHandle = FileSystemDirectoryHandle & {
  queryPermission?: (descriptor: { mode: 'read' | 'readwrite' }) => Promise<PermissionState>;
};

/** Refuses a picked folder the worker may not write, or one that already holds anything. */
export async function checkTarget(target: FileSystemDirectoryHandle): Promise<void> {
  // The page asked for readwrite access before posting the handle; this catches one revoked since.
  const state = await (target as PermissionHandle).queryPermission?.({ mode: 'readwrite' });
  if (state !== undefined && state !== 'granted')
    throw refusal(
      'PermissionDenied',
      `Writing to the folder ${target.name} is not allowed (permission: ${state}). Pick it again and allow editing.`,
    );
  for await (const name of target.keys()) {
    throw refusal(
      'FolderNotEmpty',
      `The folder ${target.name} is not empty (it holds ${name}): choose a new or empty folder, so no earlier model gets mixed in.`,
    );
  }
}

/** Removes a merge folder from OPFS, unless a running merge is writing it; a missing one is no error. */
export async function deleteMerge(folder: string): Promise<void> {
  if (writing.has(folder))
    throw refusal('MergeRunning', `merges/${folder} is being written by a running merge: cancel it first.`);
  const root = await mergesRoot();
  try {
    await root.removeEntry(folder, { recursive: true });
  } catch (error) {
    if (error instanceof Error && error.name === 'NotFoundError') return;
    throw error;
  }
}

// Model folders as the browser hands them over (a showDirectoryPicker handle, an <input> file list, a
// drop's entries), walked into one pick per model: a folder with weights of its own is one model, a
// folder without is read as a folder of model folders. No React, no store: the page decides what to load.
// Browser APIs are only touched inside functions, so Node can import this module for tests.

import { at } from './checked.ts';

/** A file of a model as the page reads it (the worker's FileRef with a Blob). */
export interface PickedFile {
  name: string;
  blob: Blob;
}

export interface PickedModel {
  label: string;
  files: PickedFile[];
  /** The folder, when picked with showDirectoryPicker: kept so that a reload can reopen it. */
  handle?: FileSystemDirectoryHandle;
  /** The folder of model folders it was found in, where it was one of a set. */
  set?: string;
}

export type DirectoryPicker = (options?: {
  mode?: 'read' | 'readwrite';
}) => Promise<FileSystemDirectoryHandle>;

/** The browser's showDirectoryPicker, where it has one (Chromium). */
export function directoryPicker(): DirectoryPicker | undefined {
  return (globalThis as { showDirectoryPicker?: DirectoryPicker }).showDirectoryPicker;
}

const isWeights = (name: string): boolean => name.endsWith('.safetensors');
/** Chromium's swap files of a createWritable in progress: never part of a model. */
const isSwap = (name: string): boolean => name.endsWith('.crswap');
const hasWeights = (files: readonly { name: string }[]): boolean => files.some((f) => isWeights(f.name));
/**
 * A subfolder of a set that holds weights or a model's config: one without weights is still a model
 * meant to be there, so it is loaded and refused by name rather than silently left out.
 */
const isModelFolder = (files: readonly { name: string }[]): boolean =>
  hasWeights(files) || files.some((f) => f.name === 'config.json' || f.name === 'adapter_config.json');

/** Top-level files of a handle's folder, and its subfolders. */
export async function readHandle(
  dir: FileSystemDirectoryHandle,
): Promise<{ files: PickedFile[]; folders: FileSystemDirectoryHandle[] }> {
  const files: PickedFile[] = [];
  const folders: FileSystemDirectoryHandle[] = [];
  for await (const handle of dir.values()) {
    if (handle.kind === 'directory') folders.push(handle as FileSystemDirectoryHandle);
    else if (!isSwap(handle.name))
      files.push({ name: handle.name, blob: await (handle as FileSystemFileHandle).getFile() });
  }
  return { files, folders };
}

const byLabel = (a: PickedModel, b: PickedModel): number =>
  a.label < b.label ? -1 : a.label > b.label ? 1 : 0;

/** A model folder, or a folder of model folders (no weights of its own): one pick per model. */
export async function pickFolder(pick: DirectoryPicker): Promise<PickedModel[]> {
  const dir = await pick({ mode: 'read' });
  const top = await readHandle(dir);
  if (hasWeights(top.files) || top.folders.length === 0)
    return [{ label: dir.name, files: top.files, handle: dir }];
  const inner = await Promise.all(
    top.folders.map(async (folder) => ({
      label: folder.name,
      files: (await readHandle(folder)).files,
      handle: folder,
      set: dir.name,
    })),
  );
  return inner.filter((p) => isModelFolder(p.files)).sort(byLabel);
}

/**
 * Files from an <input>: a folder input keeps each model folder's own files and names the model
 * after it; a folder without weights of its own is read as a folder of model folders.
 */
export function fromFileList(list: FileList): PickedModel[] {
  const all = [...list];
  const [first] = all;
  if (!first) return [];
  if (first.webkitRelativePath) {
    const parts = (f: File): string[] => f.webkitRelativePath.split('/');
    const folder = parts(first)[0] ?? 'model';
    const top = all.filter((f) => parts(f).length === 2);
    if (hasWeights(top)) return [{ label: folder, files: top.map((f) => ({ name: f.name, blob: f })) }];
    const groups = new Map<string, PickedFile[]>();
    for (const f of all.filter((file) => parts(file).length === 3)) {
      const name = at(parts(f), 1, f.webkitRelativePath);
      const group = groups.get(name) ?? [];
      group.push({ name: f.name, blob: f });
      groups.set(name, group);
    }
    const inner = [...groups]
      .map(([label, files]) => ({ label, files, set: folder }))
      .filter((p) => isModelFolder(p.files));
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

const refs = (files: File[]): PickedFile[] =>
  files.filter((f) => !isSwap(f.name)).map((f) => ({ name: f.name, blob: f }));

/** Every dropped folder becomes one model, or one per model folder inside it; loose files make one. */
export async function fromDataTransfer(data: DataTransfer): Promise<PickedModel[]> {
  const entries = [...data.items].map((item) => item.webkitGetAsEntry());
  const dirs = entries.filter((entry): entry is FileSystemDirectoryEntry => entry?.isDirectory === true);
  if (dirs.length === 0) return fromFileList(data.files);
  const picks: PickedModel[] = [];
  for (const dir of dirs) {
    const top = await readDirectoryEntry(dir);
    if (hasWeights(top.files) || top.folders.length === 0) {
      picks.push({ label: dir.name, files: refs(top.files) });
      continue;
    }
    for (const folder of top.folders) {
      const inner = await readDirectoryEntry(folder);
      if (isModelFolder(inner.files))
        picks.push({ label: folder.name, files: refs(inner.files), set: dir.name });
    }
  }
  return picks;
}

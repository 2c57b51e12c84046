// The merges library: every subfolder of OPFS `merges/`, with its files and whether the merge in it
// finished. The driver writes the model card (README.md) last, after the shards and their index, so a
// folder is complete only when the card and every weight file the folder claims are there.
import { BRANCHES_FILE } from './merge-branches.ts';
import { cardName } from './model-card.ts';

export interface LibraryFile {
  file: string;
  bytes: number;
}

export interface LibraryEntry {
  /** The subfolder of `merges/`. */
  folder: string;
  /** The merge's name, from its card's title; null where the card has none (or is not there). */
  name: string | null;
  status: 'complete' | 'incomplete';
  /** Why an incomplete folder is incomplete. */
  reason: string | null;
  files: LibraryFile[];
  bytes: number;
  /** Newest file change, ms since the epoch (0 for an empty folder). */
  modified: number;
  /** The model card (README.md) and recipe (mergekit_config.yml), when present. */
  card: string | null;
  recipe: string | null;
  /** merge_branches.json (merge-branches.ts), when the merge had statistics. */
  branches: string | null;
}

const INDEX = 'model.safetensors.index.json';
const CARD = 'README.md';
const SINGLE = 'model.safetensors';

/** Whether the files of a merge folder make a finished merge; `index` is the index file's text. */
export function folderStatus(
  files: readonly LibraryFile[],
  index: string | null,
): { status: LibraryEntry['status']; reason: string | null } {
  const names = new Map(files.map((f) => [f.file, f.bytes]));
  const incomplete = (reason: string) => ({ status: 'incomplete' as const, reason });
  if (files.some((f) => f.file.endsWith('.crswap')))
    return incomplete('a file was still being written when the merge stopped');
  if (!names.has(CARD)) return incomplete('the model card (README.md), written last, is missing');
  if (index === null) {
    if (!names.get(SINGLE)) return incomplete(`${SINGLE} is missing or empty`);
    return { status: 'complete', reason: null };
  }
  let shards: string[];
  try {
    const map = (JSON.parse(index) as { weight_map?: Record<string, string> }).weight_map;
    if (!map || typeof map !== 'object') return incomplete(`${INDEX} has no weight_map`);
    shards = [...new Set(Object.values(map))];
  } catch {
    return incomplete(`${INDEX} is not valid JSON`);
  }
  const missing = shards.filter((s) => !names.get(s));
  if (missing.length > 0) return incomplete(`shard ${missing[0]} is missing or empty`);
  return { status: 'complete', reason: null };
}

/**
 * Text files the library shows (card, recipe, branches) are read whole up to this size. The index is
 * read whatever its size: a merge's completeness depends on it, and a many-tensor (MoE) merge's index
 * passes 256 KiB (about 2,800 tensors).
 */
const MAX_SHOWN_TEXT = 256 * 1024;

async function readText(
  dir: FileSystemDirectoryHandle,
  name: string,
  limit = MAX_SHOWN_TEXT,
): Promise<string | null> {
  try {
    const file = await (await dir.getFileHandle(name)).getFile();
    return file.size > limit ? null : await file.text();
  } catch {
    return null;
  }
}

/** Every merge folder under `root`, newest first. */
export async function listLibrary(root: FileSystemDirectoryHandle): Promise<LibraryEntry[]> {
  const entries: LibraryEntry[] = [];
  for await (const handle of root.values()) {
    if (handle.kind !== 'directory') continue;
    const dir = handle as FileSystemDirectoryHandle;
    const files: LibraryFile[] = [];
    let modified = 0;
    for await (const child of dir.values()) {
      if (child.kind !== 'file') continue;
      const file = await (child as FileSystemFileHandle).getFile();
      files.push({ file: child.name, bytes: file.size });
      modified = Math.max(modified, file.lastModified);
    }
    files.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
    const names = new Set(files.map((f) => f.file));
    const card = names.has(CARD) ? await readText(dir, CARD) : null;
    const index = names.has(INDEX) ? await readText(dir, INDEX, Infinity) : null;
    const { status, reason } = folderStatus(files, names.has(INDEX) ? (index ?? '') : null);
    entries.push({
      folder: dir.name,
      name: card === null ? null : cardName(card),
      status,
      reason,
      files,
      bytes: files.reduce((sum, f) => sum + f.bytes, 0),
      modified,
      card,
      recipe: names.has('mergekit_config.yml') ? await readText(dir, 'mergekit_config.yml') : null,
      branches: names.has(BRANCHES_FILE) ? await readText(dir, BRANCHES_FILE) : null,
    });
  }
  return entries.sort((a, b) => b.modified - a.modified || (a.folder < b.folder ? 1 : -1));
}

/**
 * λ per agent as the model card's Inputs list gives them (`- agent 2: \`door\` (λ = 1.023400)`,
 * model-card.ts), in agent order: a merge listed after a reload has no session record, and its card
 * is where its λ were kept. Null where the card lists no agent with a λ.
 */
export function cardLambdas(card: string | null): number[] | null {
  if (!card) return null;
  const lambdas: number[] = [];
  for (const match of card.matchAll(/^- agent (\d+): `.*` \(λ = ([^)]+)\)$/gmu)) {
    const value = Number(match[2]);
    if (Number(match[1]) !== lambdas.length + 1 || !Number.isFinite(value)) return null;
    lambdas.push(value);
  }
  return lambdas.length > 0 ? lambdas : null;
}

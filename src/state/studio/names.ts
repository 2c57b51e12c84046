// A merge's name: the default the Name field shows, the folder name made from it (OPFS, the zip's
// top folder), and the label Compare and the library show.

/** Longest name kept; the folder part is shorter still (see folderPart). */
export const MAX_NAME = 120;
const MAX_FOLDER_PART = 64;

/** "ram-3-agents-2026-12-07": method, agent count and the local date. */
export function defaultMergeName(method: string, agents: number, date: Date): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  const day = `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}`;
  return `${method}-${agents}-agent${agents === 1 ? '' : 's'}-${day}`;
}

/** The name as typed, on one line, trimmed and cut to MAX_NAME; empty stays empty (the default applies). */
export function cleanName(name: string): string {
  return name
    .replace(/\p{Cc}+/gu, ' ')
    .trim()
    .slice(0, MAX_NAME);
}

/**
 * The name as a folder name that every file system takes: letters, digits, '.', '_' and '-' kept
 * (other characters, spaces included, become one '-'), no leading dot or dash, at most 64
 * characters; 'merge' where nothing is left.
 */
export function folderPart(name: string): string {
  const part = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[-.]+/, '')
    .slice(0, MAX_FOLDER_PART)
    .replace(/[-.]+$/, '');
  return part === '' ? 'merge' : part;
}

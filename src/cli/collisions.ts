// What the CLI writes must never land on what it reads: every output path (--out, --stats, --json) is
// compared with every input file before any weights are read — by real path (symlinks and `..`
// resolved) and, for files that exist, by device and inode (a hard link is the same file under another
// name) — and with the other outputs. A merge that replaced its base's weights with a statistics JSON
// and exited 0 is what this prevents.
import { realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { Model } from '../format/model.ts';
import { UsageError } from './args.ts';

export interface OutputPath {
  /** The flag as the user typed it, for the message. */
  flag: string;
  path: string;
  /** A folder the command fills (--out): nothing read may lie inside it. */
  folder?: boolean;
}

interface Place {
  path: string;
  /** The absolute path with every symlink resolved (for one not there yet: its parent's, plus its name). */
  real: string;
  /** device:inode where the path exists. */
  id?: string;
}

async function placeOf(path: string): Promise<Place> {
  const absolute = resolve(path);
  try {
    const real = await realpath(absolute);
    const info = await stat(real);
    return { path, real, id: `${info.dev}:${info.ino}` };
  } catch {
    // Not there yet (or a dangling link): where it would be created.
    const parent = await realpath(dirname(absolute)).catch(() => dirname(absolute));
    return { path, real: join(parent, basename(absolute)) };
  }
}

const within = (child: string, folder: string): boolean => child === folder || child.startsWith(folder + sep);

/**
 * Refuses, with a UsageError naming both paths, an output that is an input file (same real path or
 * same inode), a folder output holding an input, two outputs that are one file, and a file output
 * inside a folder output.
 */
export async function refuseOutputsOnInputs(
  outputs: readonly OutputPath[],
  inputs: readonly string[],
): Promise<void> {
  const read = await Promise.all(inputs.map(placeOf));
  const written = await Promise.all(outputs.map(async (o) => ({ ...o, place: await placeOf(o.path) })));
  for (const out of written) {
    for (const input of read) {
      const same = out.place.real === input.real || (out.place.id !== undefined && out.place.id === input.id);
      if (same)
        throw new UsageError(
          `${out.flag} ${out.path} is the input ${input.path}${out.place.real === input.real ? '' : ' (a link to it)'}: ` +
            'writing there would destroy it; choose another path',
        );
      if (out.folder && within(input.real, out.place.real))
        throw new UsageError(
          `${out.flag} ${out.path} holds the input ${input.path}: choose a folder outside the inputs`,
        );
    }
  }
  for (const [i, a] of written.entries())
    for (const b of written.slice(i + 1)) {
      if (a.place.real === b.place.real || (a.place.id !== undefined && a.place.id === b.place.id))
        throw new UsageError(`${a.flag} ${a.path} and ${b.flag} ${b.path} are one path: give each its own`);
      for (const [file, folder] of [
        [a, b],
        [b, a],
      ] as const)
        if (folder.folder && !file.folder && within(file.place.real, folder.place.real))
          throw new UsageError(
            `${file.flag} ${file.path} is inside ${folder.flag} ${folder.path}, the model folder being written: put it elsewhere`,
          );
    }
}

/** The files of a model as paths: the file itself, or each file of its folder. */
export function modelFilePaths(path: string, model: Model): string[] {
  return model.files.length === 1 && model.files[0]?.name === basename(path)
    ? [path]
    : model.files.map((f) => join(path, f.name));
}

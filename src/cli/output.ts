// The CLI's output folder, claimed exclusively and published whole: the merge is written into a
// sibling working folder created with an exclusive mkdir (a second merge into the same --out fails
// there, before any heavy work), renamed onto --out only at the end, and removed on any failure or
// signal. Also the preflight of write access and free space, and the signal handling around it.

import { rmSync } from 'node:fs';
import { hostname } from 'node:os';
import {
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  statfs,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { formatBytes } from '../format/inspect.ts';
import { UsageError } from './args.ts';

export class OutputError extends Error {
  override name = 'OutputError';
}

/** What the operating system said, in words a user can act on, with its code. */
function reason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const words: Record<string, string> = {
    EROFS: 'the file system is read-only',
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    ENOSPC: 'no space left on the device',
    EDQUOT: 'disk quota exceeded',
    ENOTDIR: 'a part of the path is not a folder',
  };
  return code && words[code] ? `${words[code]} (${code})` : (error as Error).message;
}

export interface OutputClaim {
  /** The final folder (absolute). */
  readonly out: string;
  /** The working folder the merge writes into. */
  readonly staging: string;
  /** Where the statistics JSON goes before publishing, when --stats was given. */
  readonly statsPartial?: string;
  /** Writes the statistics text into the claimed partial file. */
  writeStats(text: string): Promise<void>;
  /** Renames the working folder onto --out (and the statistics into place). */
  publish(): Promise<void>;
  /** Removes everything this claim created. */
  discard(): Promise<void>;
  /** The same, synchronously, for a second signal that must not wait for anything. */
  discardSync(): void;
}

async function refuseNonEmpty(out: string): Promise<void> {
  let entries: string[];
  // Publishing renames the working folder onto --out, which a link (dangling or not) would make fail
  // only after the whole merge: said now, before any weights are read.
  const link = await lstat(out).catch(() => undefined);
  if (link?.isSymbolicLink()) {
    const target = await readlink(out).catch(() => '?');
    throw new UsageError(
      `--out ${out} is a symbolic link (to ${target}): give the folder itself, or a new path`,
    );
  }
  try {
    const info = await stat(out);
    if (!info.isDirectory()) throw new UsageError(`--out ${out} exists and is not a folder`);
    entries = await readdir(out);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (entries.length > 0)
    throw new UsageError(`--out ${out} is not empty: choose a new folder, so no earlier model gets mixed in`);
}

/** The file in a working folder that names the process writing it, so a dead one's can be reclaimed. */
export const OWNER_FILE = '.merge-studio-owner.json';

interface Owner {
  pid: number;
  host: string;
}

async function readOwner(staging: string): Promise<Owner | undefined> {
  try {
    const owner = JSON.parse(await readFile(join(staging, OWNER_FILE), 'utf8')) as Partial<Owner>;
    return typeof owner.pid === 'number' && typeof owner.host === 'string'
      ? { pid: owner.pid, host: owner.host }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Whether process `pid` of this machine still runs (signal 0 tests without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A working folder left by a merge whose process is gone (killed, or the machine restarted) is
 * moved aside and removed, so it does not block every later merge to that --out. Only a folder whose
 * owner file names a process of this host that no longer runs is reclaimed; anything else (a live
 * merge, another host on a shared disk, no owner file) is left alone and reported. The folder is
 * renamed before it is removed and its owner read again there, so two merges reclaiming at once cannot
 * remove a folder the other has just made.
 */
async function reclaimStale(staging: string): Promise<Owner | undefined> {
  const owner = await readOwner(staging);
  if (!owner || owner.host !== hostname() || alive(owner.pid)) return undefined;
  const aside = `${staging}.stale-${process.pid}`;
  try {
    await rename(staging, aside);
  } catch {
    return undefined;
  }
  const moved = await readOwner(aside);
  if (moved?.pid !== owner.pid || moved.host !== owner.host) {
    await rename(aside, staging).catch(() => undefined);
    return undefined;
  }
  await rm(aside, { recursive: true, force: true });
  return owner;
}

/**
 * Claims --out before any heavy work: refuses a non-empty one, creates the working folder
 * `.NAME.partial` beside it exclusively (so it also proves write access), checks the free space there
 * against `predictedBytes`, and claims `STATS.partial` for --stats. `freeBytes` replaces statfs in tests.
 */
export async function claimOutput(
  outPath: string,
  predictedBytes: number,
  statsPath?: string,
  options: { statsBytes?: number; freeBytes?: (dir: string) => Promise<number> } = {},
): Promise<OutputClaim> {
  const out = resolve(outPath);
  const freeBytes = options.freeBytes;
  await refuseNonEmpty(out);
  if (statsPath) await refuseStatsTarget(statsPath);
  const parent = dirname(out);
  const staging = join(parent, `.${basename(out)}.partial`);
  let reclaimed: Owner | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      await mkdir(parent, { recursive: true });
      await mkdir(staging);
      await writeFile(join(staging, OWNER_FILE), JSON.stringify({ pid: process.pid, host: hostname() }));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new OutputError(`cannot write the output beside ${out}: ${reason(error)}`);
      if (attempt === 0 && (reclaimed = await reclaimStale(staging))) continue;
      const owner = await readOwner(staging);
      throw new OutputError(
        `another merge is writing --out ${out}: its working folder ${staging} exists` +
          (owner ? ` (process ${owner.pid} on ${owner.host})` : '') +
          '. If no merge is running, remove that folder and try again.',
      );
    }
  }
  if (reclaimed)
    process.stderr.write(
      `Note: removed ${staging}, left by a merge that no longer runs (process ${reclaimed.pid}).\n`,
    );
  let stats: FileHandle | undefined;
  const statsPartial = statsPath ? `${resolve(statsPath)}.partial` : undefined;
  const claim: OutputClaim = {
    out,
    staging,
    statsPartial,
    async writeStats(text) {
      if (!stats) throw new OutputError('no --stats file was claimed');
      await stats.writeFile(text);
      await stats.close();
      stats = undefined;
    },
    async publish() {
      await rm(join(staging, OWNER_FILE), { force: true });
      try {
        await rename(staging, out);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR')
          throw new OutputError(
            `--out ${out} was filled by something else during the merge; nothing of this merge was published`,
          );
        throw new OutputError(`cannot publish the output as ${out}: ${reason(error)}`);
      }
      if (statsPath && statsPartial) await rename(statsPartial, resolve(statsPath));
    },
    async discard() {
      await stats?.close().catch(() => undefined);
      stats = undefined;
      await rm(staging, { recursive: true, force: true });
      if (statsPartial) await rm(statsPartial, { force: true });
    },
    discardSync() {
      rmSync(staging, { recursive: true, force: true });
      if (statsPartial) rmSync(statsPartial, { force: true });
    },
  };
  try {
    const free = await (freeBytes ?? freeSpace)(staging);
    if (free < predictedBytes)
      throw new OutputError(
        `not enough free space for --out ${out}: the merge writes about ${formatBytes(predictedBytes)}, ` +
          `${formatBytes(free)} are free there`,
      );
    if (statsPartial) {
      await mkdir(dirname(statsPartial), { recursive: true });
      stats = await open(statsPartial, 'wx').catch((error: unknown) => {
        throw new OutputError(`cannot write --stats ${statsPath}: ${reason(error)}`);
      });
      // On the model's file system the two add up; elsewhere the statistics need their own room.
      const statsBytes = options.statsBytes ?? 0;
      const statsFree = await (freeBytes ?? freeSpace)(dirname(statsPartial));
      const sameDevice = (await stat(dirname(statsPartial))).dev === (await stat(staging)).dev;
      const needed = statsBytes + (sameDevice ? predictedBytes : 0);
      if (statsFree < needed)
        throw new OutputError(
          `not enough free space for --stats ${statsPath}: the statistics take up to ${formatBytes(statsBytes)}` +
            (sameDevice ? ` beside the merge's ${formatBytes(predictedBytes)}` : '') +
            `, ${formatBytes(statsFree)} are free there`,
        );
    }
  } catch (error) {
    await claim.discard();
    throw error;
  }
  return claim;
}

/** --stats must name a file: a folder, or a link to one, would fail after the merge (EISDIR). */
async function refuseStatsTarget(statsPath: string): Promise<void> {
  const info = await stat(statsPath).catch(() => undefined);
  if (info && !info.isFile())
    throw new UsageError(
      `--stats ${statsPath} is a folder or another non-file: give the path of a JSON file`,
    );
}

async function freeSpace(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}

/** Exit status of a run stopped by a signal: 128 + its number, as shells report it. */
export const SIGNAL_EXIT: Record<string, number> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

export type RunStage = 'working' | 'publishing' | 'published';

/**
 * SIGINT, SIGTERM and SIGHUP cancel the run: the first aborts it (the caller then removes its work),
 * a second removes the working folder at once and exits. A signal after publishing changes nothing,
 * and says so. `stage()` tells where the run is; `cleanup` is the synchronous removal.
 */
export function handleSignals(
  controller: AbortController,
  stage: () => RunStage,
  cleanup: () => void,
  out?: string,
): { signal: () => string | undefined; dispose(): void } {
  let received: string | undefined;
  let count = 0;
  const onSignal = (name: NodeJS.Signals): void => {
    count++;
    received ??= name;
    if (stage() === 'published') {
      process.stderr.write(`\n${name}: the merge had already completed; ${out} is a whole model.\n`);
      return;
    }
    if (count === 1) {
      process.stderr.write(`\n${name}: cancelling… (once more to stop at once)\n`);
      controller.abort();
      return;
    }
    try {
      cleanup();
      process.stderr.write(`\n${name}: stopped; the unfinished output was removed.\n`);
    } finally {
      process.exit(SIGNAL_EXIT[received] ?? 130);
    }
  };
  const names: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const name of names) process.on(name, onSignal);
  return {
    signal: () => received,
    dispose: () => names.forEach((name) => process.off(name, onSignal)),
  };
}

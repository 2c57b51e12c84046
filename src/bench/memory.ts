// Memory of processes as Linux accounts it: PSS (shared pages split between their users) and RSS from
// /proc/PID/smaps_rollup, summed over a set of processes, and sampled while work runs.
import { readdir, readFile } from 'node:fs/promises';

export interface Memory {
  pss: number;
  rss: number;
  processes: number;
}

/** PSS and RSS of one process in bytes; null once it has exited (or is not ours to read). */
async function processMemory(pid: number): Promise<{ pss: number; rss: number } | null> {
  try {
    const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (field: string): number =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    return { pss: kb('Pss') * 1024, rss: kb('Rss') * 1024 };
  } catch {
    return null;
  }
}

/** Every live process id with its parent and command line. */
async function processTable(): Promise<{ pid: number; ppid: number; cmdline: string }[]> {
  const rows: { pid: number; ppid: number; cmdline: string }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // The command name in parentheses may hold spaces: the fields after its closing one are fixed.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).replaceAll('\0', ' ');
      rows.push({ pid: Number(entry), ppid, cmdline });
    } catch {
      // Gone between the listing and the read.
    }
  }
  return rows;
}

/** The process and all its descendants. */
export async function treeOf(root: number): Promise<number[]> {
  const table = await processTable();
  const pids = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const row of table)
      if (pids.has(row.ppid) && !pids.has(row.pid)) {
        pids.add(row.pid);
        grew = true;
      }
  }
  return [...pids];
}

/** Processes whose command line contains `marker` (e.g. a browser profile's --user-data-dir). */
export async function processesWith(marker: string): Promise<number[]> {
  return (await processTable()).filter((row) => row.cmdline.includes(marker)).map((row) => row.pid);
}

export async function sumMemory(pids: readonly number[]): Promise<Memory> {
  const total: Memory = { pss: 0, rss: 0, processes: 0 };
  for (const pid of pids) {
    const m = await processMemory(pid);
    if (!m) continue;
    total.pss += m.pss;
    total.rss += m.rss;
    total.processes++;
  }
  return total;
}

/** Samples the memory of `pids()` every `everyMs` until stopped; keeps the peak of PSS and of RSS. */
export function sampleMemory(pids: () => Promise<number[]>, everyMs = 250): { stop(): Promise<Memory> } {
  const peak: Memory = { pss: 0, rss: 0, processes: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      const now = await sumMemory(await pids());
      peak.pss = Math.max(peak.pss, now.pss);
      peak.rss = Math.max(peak.rss, now.rss);
      peak.processes = Math.max(peak.processes, now.processes);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux's usual builds). */
const TICKS_PER_SECOND = 100;

/** CPU seconds per thread group ("role: thread name"), user and system time together. */
export type CpuTimes = Map<string, number>;

/** A Chromium process's role from its command line (its --type, or the browser process itself). */
function roleOf(cmdline: string): string {
  const type = /--type=([\w-]+)/.exec(cmdline)?.[1];
  if (!type) return 'browser';
  const sub = /--utility-sub-type=([\w.]+)/.exec(cmdline)?.[1];
  return sub ? `utility ${sub.split('.').at(-1)}` : type;
}

/** utime + stime of a /proc stat line, in seconds. */
function statSeconds(stat: string): number {
  // Fields after the parenthesised name: state is the first, utime the 12th, stime the 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * Threads told apart though they share a name: Chromium names every Web Worker's thread
 * "DedicatedWorker", and the studio runs two (the engine worker from page load, the shard hash worker
 * from the first merge), so they are numbered in the order they started (1: the engine worker).
 */
const NUMBERED_THREADS = new Set(['DedicatedWorker']);

/**
 * CPU time of every thread of `pids`, summed by process role and thread name (thread names with
 * their numbers dropped, so a pool's threads add up; NUMBERED_THREADS numbered instead): what a bench
 * subtracts before from after.
 */
export async function cpuTimes(pids: readonly number[]): Promise<CpuTimes> {
  const times: CpuTimes = new Map();
  for (const pid of pids) {
    try {
      const role = roleOf((await readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' '));
      const seen = new Map<string, number>();
      const tids = (await readdir(`/proc/${pid}/task`)).map(Number).sort((a, b) => a - b);
      for (const tid of tids) {
        const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null);
        if (!stat) continue;
        let name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[\d/]+$/, '');
        if (NUMBERED_THREADS.has(name)) {
          seen.set(name, (seen.get(name) ?? 0) + 1);
          name = `${name} ${seen.get(name)}`;
        }
        const key = `${role}: ${name}`;
        times.set(key, (times.get(key) ?? 0) + statSeconds(stat));
      }
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return times;
}

/** after − before per key (threads that ended in between are lost; keys that only appear count whole). */
export function cpuSince(before: CpuTimes, after: CpuTimes): CpuTimes {
  const since: CpuTimes = new Map();
  for (const [key, s] of after) {
    const d = s - (before.get(key) ?? 0);
    if (d > 0) since.set(key, d);
  }
  return since;
}

/** CPU seconds of this process's waited-for children (cutime + cstime), e.g. a CLI run that exited. */
export async function childrenCpuSeconds(): Promise<number> {
  const stat = await readFile('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
}

// `npm run bench -- --studio`: the same generated Llama-shaped set merged in one run by the studio in
// headless Chromium (the built app, models loaded through its folder inputs, Merge clicked) and by the
// CLI, per method: wall time, GB/s, ratio to a raw read of the files, browser ÷ CLI, the worker's
// stage times, and the peak memory of each side (Chromium's processes summed, idle and during).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from '@playwright/test';
import { DEFAULT_WINDOW_ELEMENTS } from '../engine/gpu/plumbing.ts';
import { formatBytes } from '../format/inspect.ts';
import { must } from '../io/checked.ts';
import type { MethodName } from '../methods/types.ts';
import type { MergeRecord } from '../state/studio-slice.ts';
// For its global declaration of window.__mergeStudio, which the page calls run against.
import type {} from '../state/test-api.ts';
import {
  benchSet,
  cliMerge,
  describeSet,
  cliStats,
  engineLine,
  median,
  seconds,
  type CliRun,
  type SetOptions,
} from './cli-set.ts';
import {
  cpuSince,
  cpuTimes,
  processesWith,
  sampleMemory,
  sumMemory,
  type CpuTimes,
  type Memory,
} from './memory.ts';

export interface StudioBenchOptions extends SetOptions {
  methods: MethodName[];
  port: number;
  clean: boolean;
  /**
   * The studio's read-ahead and write-behind: on (its default), off, or both: each method merged
   * without and then with them, side by side in the same page.
   */
  overlap: 'on' | 'off' | 'both';
  /**
   * Rounds per method: a studio merge per setting (without, then with, where both were asked for),
   * then a CLI merge. The table shows each side's median run, every pair's ratio and every round's
   * studio ÷ CLI.
   */
  repeat: number;
}

interface Side {
  ms: number;
  peak: Memory;
  /** CPU seconds of Chromium's threads from the click to the record, by role and thread name. */
  cpu: CpuTimes;
}

interface Result {
  method: MethodName;
  browser: Side & { record: MergeRecord };
  /** The same merge without the read-ahead and write-behind, where --overlap both asked for it. */
  withoutOverlap?: Side & { record: MergeRecord };
  /** Every repeat's with ÷ without, in order, where both ran. */
  pairs: number[];
  /** The CLI's median run. */
  cli: CliRun;
  /** Every round's studio ÷ CLI, in order. */
  rounds: number[];
  /** Per round, whether the studio's merge made its engine (else it ran on the one a job before kept). */
  newEngine: boolean[];
}

async function setOverlap(page: Page, on: boolean): Promise<void> {
  await page.evaluate(
    async ([value, missing]) => {
      if (!window.__mergeStudio) throw new Error(missing);
      await window.__mergeStudio.setOverlap(value);
    },
    [on, API_MISSING] as const,
  );
}

export const CHROMIUM_ARGS = [
  '--enable-unsafe-webgpu',
  '--disable-quic',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // Extra flags for a profiling run, e.g. STUDIO_CHROMIUM_ARGS='--no-sandbox --js-flags=--perf-basic-prof'
  // under `perf record -a` (JavaScript frames named in /tmp/perf-PID.map).
  ...(process.env.STUDIO_CHROMIUM_ARGS ?? '').split(' ').filter(Boolean),
];

/** The page's test API (e2e builds only); runs inside the page, so it is written out in each call. */
const API_MISSING = 'the app was not built in e2e mode: it has no test API';

/** Builds the app in e2e mode (it carries the test API) and serves it with vite preview. */
export async function serve(outDir: string, port: number): Promise<ChildProcess> {
  const build = spawnSync(
    'npx',
    ['vite', 'build', '--mode', 'e2e', '--outDir', outDir, '--emptyOutDir', '--logLevel', 'warn'],
    {
      stdio: 'inherit',
    },
  );
  if (build.status !== 0) throw new Error(`vite build failed (exit ${build.status})`);
  const server = spawn(
    'npx',
    [
      'vite',
      'preview',
      '--mode',
      'e2e',
      '--outDir',
      outDir,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--strictPort',
    ],
    { stdio: 'ignore', detached: true },
  );
  for (let tries = 0; tries < 100; tries++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/`)).ok) return server;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`vite preview did not answer on port ${port}`);
}

export async function loadSet(page: Page, dir: string, agents: number): Promise<number> {
  await page.evaluate(async (missing) => {
    if (!window.__mergeStudio) throw new Error(missing);
    await window.__mergeStudio.analysisSettled();
  }, API_MISSING);
  while ((await page.getByTestId('model-agent-0-remove').count()) > 0)
    await page.getByTestId('model-agent-0-remove').click();
  const started = performance.now();
  await page.getByTestId('model-base-folder-input').setInputFiles(join(dir, 'base'));
  for (let t = 0; t < agents; t++)
    await page.getByTestId('model-new-agent-folder-input').setInputFiles(join(dir, `agent-${t}`));
  // The studio runs the statistics once the models are in: wait for the pass over all agents.
  for (;;) {
    const state = await page.evaluate(() => {
      const s = window.__mergeStudio?.studio();
      return { labels: s?.analysisLabels.length, status: s?.analysis.status };
    });
    if (state.labels === agents && state.status === 'done') break;
    if (state.status === 'error') throw new Error('the studio failed to load the set or its statistics');
    await new Promise((r) => setTimeout(r, 250));
  }
  return performance.now() - started;
}

async function browserMerge(
  page: Page,
  method: MethodName,
  pids: () => Promise<number[]>,
): Promise<Side & { record: MergeRecord }> {
  await page.getByTestId('method-select').selectOption(method);
  const count = await page.evaluate(() => window.__mergeStudio?.studio().merges.length ?? 0);
  const sampler = sampleMemory(pids);
  const cpuBefore = await cpuTimes(await pids());
  await page.getByTestId('merge-run').click();
  for (;;) {
    const state = await page.evaluate(() => {
      const s = window.__mergeStudio?.studio();
      return { merges: s?.merges.length ?? 0, status: s?.merge.status, error: s?.merge.error?.message };
    });
    if (state.merges > count) break;
    if (state.status === 'error') throw new Error(`the studio's ${method} merge failed: ${state.error}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const cpu = cpuSince(cpuBefore, await cpuTimes(await pids()));
  const peak = await sampler.stop();
  const record = await page.evaluate(() => window.__mergeStudio?.studio().merges.at(-1));
  if (!record) throw new Error(`the studio's ${method} merge left no record`);
  // Disk is limited: the merge leaves OPFS again.
  await page.evaluate(async (folder) => {
    const root = await navigator.storage.getDirectory();
    await (await root.getDirectoryHandle('merges')).removeEntry(folder, { recursive: true });
  }, record.folder);
  return { ms: record.elapsedMs, peak, cpu, record };
}

/** Bytes per File.slice read in browserRawRead: one model's slot of a default bf16 window. */
const BROWSER_READ_BYTES = DEFAULT_WINDOW_ELEMENTS * 2;

/**
 * The browser's floor for reading the set: every file through a file input, File.slice(a, b).arrayBuffer()
 * in 16 MiB pieces, the files' pieces at one offset read together (as the worker reads a window of
 * every model), in a blank page of the same browser.
 */
async function browserRawRead(page: Page, files: string[]): Promise<{ bytes: number; ms: number }> {
  await page.setContent('<input type="file" multiple>');
  await page.locator('input').setInputFiles(files);
  return page.evaluate(async (piece) => {
    const picked = [...(document.querySelector('input')?.files ?? [])];
    const started = performance.now();
    let bytes = 0;
    const end = Math.max(...picked.map((f) => f.size));
    for (let at = 0; at < end; at += piece) {
      const pieces = picked.filter((f) => f.size > at).map((f) => f.slice(at, at + piece).arrayBuffer());
      for (const b of await Promise.all(pieces)) bytes += b.byteLength;
    }
    return { bytes, ms: performance.now() - started };
  }, BROWSER_READ_BYTES);
}

export async function runStudioBench(o: StudioBenchOptions): Promise<string> {
  const set = await benchSet(o);
  const { dir, files, raw } = set;

  const server = await serve(join(o.workDir, 'studio-build'), o.port);
  const profile = await mkdtemp(join(tmpdir(), 'merge-studio-bench-'));
  // A persistent profile keeps OPFS on disk, as a person's browser does (an incognito one holds it in memory).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
  const chromiumPids = () => processesWith(profile);
  const results: Result[] = [];
  let statsMs: number;
  let idle: Memory;
  let analyze: CliRun | null;
  let browserRead: { bytes: number; ms: number };
  const statsPath = join(o.workDir, 'stats.json');
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`http://127.0.0.1:${o.port}/`);
    statsMs = await loadSet(page, dir, o.agents);
    if (o.memoryBudget) {
      await page.getByTestId('engine-card').locator('summary').click();
      await page.getByTestId('memory-budget-select').selectOption(String(o.memoryBudget));
    }
    // Idle is without the engine the statistics leave kept (its buffers), as a page a minute later.
    await page.evaluate(async (missing) => {
      if (!window.__mergeStudio) throw new Error(missing);
      await window.__mergeStudio.releaseEngine();
    }, API_MISSING);
    await new Promise((r) => setTimeout(r, 2000));
    idle = await sumMemory(await chromiumPids());
    // analyze is timed against the studio's statistics, and serves the CLI's RAM+ as --stats-in.
    analyze = await cliStats(set, o.methods, statsPath);
    for (const method of o.methods) {
      const withRuns: Result['browser'][] = [];
      const withoutRuns: Result['browser'][] = [];
      const cliRuns: CliRun[] = [];
      for (let r = 0; r < o.repeat; r++) {
        const round = o.repeat > 1 ? ` (${r + 1} of ${o.repeat})` : '';
        if (o.overlap !== 'on') {
          process.stderr.write(`${method}: studio without overlap${round}…\n`);
          await setOverlap(page, false);
          withoutRuns.push(await browserMerge(page, method, chromiumPids));
          await setOverlap(page, true);
        }
        if (o.overlap !== 'off') {
          process.stderr.write(`${method}: studio${round}…\n`);
          withRuns.push(await browserMerge(page, method, chromiumPids));
        }
        // The CLI runs as often, each right after the studio's run of its round.
        process.stderr.write(`${method}: CLI${round}…\n`);
        cliRuns.push(
          await cliMerge(set, method, o.workDir, statsPath, 'paced', { memoryBudget: o.memoryBudget }),
        );
      }
      const studioRuns = o.overlap === 'off' ? withoutRuns : withRuns;
      const browser = median(studioRuns);
      results.push({
        method,
        browser,
        cli: median(cliRuns),
        rounds: studioRuns.map((b, r) => b.ms / must(cliRuns[r], 'CLI run').ms),
        newEngine: studioRuns.map((b) => b.record.stages.warmEngine !== true),
        pairs: o.overlap === 'both' ? withRuns.map((w, r) => w.ms / must(withoutRuns[r], 'pair').ms) : [],
        ...(o.overlap === 'both' ? { withoutOverlap: median(withoutRuns) } : {}),
      });
    }
    browserRead = await browserRawRead(await context.newPage(), files);
  } finally {
    await context.close();
    if (server.pid !== undefined) process.kill(-server.pid);
    await rm(profile, { recursive: true, force: true });
    if (o.clean) await rm(dir, { recursive: true, force: true });
  }

  const inputBytes = set.modelBytes * (o.agents + 1);
  const gbps = (ms: number): number => inputBytes / 1e9 / (ms / 1000);
  const rawGbps = raw.bytes / 1e9 / (raw.ms / 1000);
  const s = seconds;
  const lines = [
    ...describeSet(set, o),
    `Chromium's File.slice reads of the same files (16 MiB pieces, every file's at once): ${s(browserRead.ms)} = ${(browserRead.bytes / 1e9 / (browserRead.ms / 1000)).toFixed(3)} GB/s.`,
    `Statistics: studio ${s(statsMs)} (loading included), CLI analyze ${analyze ? s(analyze.ms) : '— (not run)'}.`,
    `Chromium idle with the set loaded: PSS ${formatBytes(idle.pss)}, RSS ${formatBytes(idle.rss)} (${idle.processes} processes).`,
    `CLI engine: ${results[0] ? engineLine(results[0].cli.stderr) : '—'}.`,
    `Studio shard hashes: ${[...new Set(results.map((r) => `${r.browser.record.stages.hash} on the ${r.browser.record.stages.hashThread}`))].join(', ')}.`,
    ...(o.overlap === 'off'
      ? ['The studio merged without read-ahead and write-behind (--overlap off).']
      : []),
    '',
    '| method | studio | CLI | studio ÷ CLI | ÷ RAM (studio / CLI) | studio GB/s | ÷ raw read | studio read ÷ inputs | read | upload | compute | readback | write | Chromium peak PSS (Δ idle) | Chromium peak RSS | CLI peak PSS / RSS | studio without overlap (÷ with) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  // Each method beside a RAM merge of the same run, where one ran.
  const ram = results.find((r) => r.method === 'ram');
  const perRam = (r: Result): string =>
    ram ? `${(r.browser.ms / ram.browser.ms).toFixed(2)} / ${(r.cli.ms / ram.cli.ms).toFixed(2)}` : '—';
  for (const r of results) {
    const st = r.browser.record.stages;
    lines.push(
      `| ${r.method} | ${s(r.browser.ms)} | ${s(r.cli.ms)} | ${(r.browser.ms / r.cli.ms).toFixed(2)} | ${perRam(r)} | ${gbps(r.browser.ms).toFixed(3)} | ${(gbps(r.browser.ms) / rawGbps).toFixed(3)} | ${(st.readBytes / inputBytes).toFixed(2)} | ` +
        `${s(st.readMs)} | ${s(st.uploadMs)} | ${s(st.computeMs)} | ${s(st.readbackMs)} | ${s(st.writeMs)} | ` +
        `${formatBytes(r.browser.peak.pss)} (+${formatBytes(r.browser.peak.pss - idle.pss)}) | ${formatBytes(r.browser.peak.rss)} | ` +
        `${formatBytes(r.cli.peak.pss)} / ${formatBytes(r.cli.peak.rss)} | ` +
        `${r.withoutOverlap ? `${s(r.withoutOverlap.ms)} (${(r.withoutOverlap.ms / r.browser.ms).toFixed(2)})` : '—'} |`,
    );
  }
  // Per method, a list of ratios in the order they ran, where some method has more than one.
  const ratioLists = (
    heading: string,
    of: (r: Result) => number[],
    mark: (r: Result, i: number) => string = () => '',
  ): void => {
    if (!results.some((r) => of(r).length > 1)) return;
    lines.push('', heading, '');
    for (const r of results)
      lines.push(
        `- ${r.method}: ${of(r)
          .map((p, i) => `${p.toFixed(2)}${mark(r, i)}`)
          .join(', ')}`,
      );
  };
  ratioLists(
    'Studio ÷ CLI round by round (each round a studio merge, then the CLI merge; the table divides the medians; ' +
      '"new engine": the studio made its engine, where the others ran on the one the job before kept):',
    (r) => r.rounds,
    (r, i) => (r.newEngine[i] ? ' (new engine)' : ''),
  );
  ratioLists(
    'Each pair of studio runs (with ÷ without overlap, in the order they ran; the table shows the medians):',
    (r) => r.pairs,
  );
  lines.push(
    '',
    "CPU seconds during each merge (user + system, every thread; Chromium's processes from the click to the record, the CLI's whole run):",
    '',
    '| method | studio CPU (÷ wall) | by process | busiest threads | CLI CPU (÷ wall) |',
    '|---|---|---|---|---|',
  );
  for (const r of results) {
    const c = cpuSummary(r.browser.cpu);
    lines.push(
      `| ${r.method} | ${c.total.toFixed(1)} s (${(c.total / (r.browser.ms / 1000)).toFixed(2)}) | ${c.roles} | ${c.threads} | ` +
        `${r.cli.cpuS.toFixed(1)} s (${(r.cli.cpuS / (r.cli.ms / 1000)).toFixed(2)}) |`,
    );
  }
  return lines.join('\n');
}

/**
 * CPU seconds in all, by process role, and the eight busiest threads: enough to list both workers
 * (DedicatedWorker 1, the engine's; 2, the shard hash worker) beside SwiftShader's and the browser's.
 */
function cpuSummary(cpu: CpuTimes): { total: number; roles: string; threads: string } {
  const byRole = new Map<string, number>();
  let total = 0;
  for (const [key, s] of cpu) {
    const role = key.slice(0, key.indexOf(':'));
    byRole.set(role, (byRole.get(role) ?? 0) + s);
    total += s;
  }
  const listed = (m: Map<string, number>, n: number): string =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${k} ${v.toFixed(1)}`)
      .join(', ');
  return { total, roles: listed(byRole, 4), threads: listed(cpu, 8) };
}

// The engine worker's merge jobs: a merge into OPFS or a picked folder (checked before any work,
// removed on failure, kept only if no input changed), a copy of a merge out of OPFS, and the
// read-back that checks a written folder against the sizes and hashes the merge reported.
import { isAbortError, throwIfAborted } from '../io/abort.ts';
import { checkUnchanged, directoryHandleFolder } from '../io/browser.ts';
import { Sha256, sha256Backend, type Sha256Backend } from '../io/sha256.ts';
import {
  HashOffload,
  type HashPort,
  type HashReply,
  type HashRequest,
  type StreamHash,
} from '../io/sha256-offload.ts';
import { BROWSER_SHARD_BYTES, mergeModels, predictOutputBytes } from '../driver/driver.ts';
import { type Progress } from '../driver/job.ts';
import { StageClock, timedFolder } from '../io/timed.ts';
import { memoryBudget, withEngine } from './engines.ts';
import type { MergeEngine, StageTimings } from '../engine/contract.ts';
import { agentModels, model, readTotals, recalledAnalysis, snapshot } from './models.ts';
import type { MergeStages, ReadBackFile, WorkerCalls } from './protocol.ts';
import { windowCacheSince } from '../engine/gpu/window-cache.ts';
import {
  checkStorage,
  checkTarget,
  claimFolder,
  isQuotaError,
  mergesRoot,
  quotaFull,
  writing,
} from './storage.ts';
import type { Recipe } from '../methods/recipe.ts';
import { recipeResolver } from '../methods/resolve.ts';

/**
 * The shard hash worker (hash-worker.ts), started by the first job that hashes and kept while it
 * works; 'failed' once one failed, after which jobs hash on this thread, so one failure fails one job.
 */
let hashes: HashOffload | 'failed' | null = null;

/** Test aid (WorkerSettings.breakHashWorker): the next hash worker starts from a missing script. */
let brokenScript = false;

export function breakNextHashWorker(): void {
  brokenScript = true;
}

/** Hashes on this thread (the CLI's way): where no hash worker starts, or one failed before. */
const onThisThread = {
  stream: (): StreamHash => new Sha256(),
  backend: sha256Backend,
  thread: 'engine worker' as const,
};

/**
 * The shard hashes of this job: on the hash worker, or on this thread where none starts (a policy
 * that forbids it) or one failed, with the backend that computes them.
 */
function shardHashes(): {
  stream: () => StreamHash;
  backend: () => Sha256Backend;
  thread: MergeStages['hashThread'];
} {
  // Failed by a report of its own or by its error event (which fails the offload too).
  if (hashes instanceof HashOffload && hashes.failed) hashes = 'failed';
  if (hashes === 'failed') return onThisThread;
  if (!hashes) {
    try {
      const worker = brokenScript
        ? new Worker(new URL('./no-such-hash-worker.js', self.location.href), { type: 'module' })
        : new Worker(new URL('./hash-worker.ts', import.meta.url), {
            type: 'module',
            name: 'merge-studio-hash',
          });
      brokenScript = false;
      const offload = new HashOffload(worker as unknown as HashPort<HashReply, HashRequest>);
      // Failed by its error event or by a report of its own: either way it is let go at once.
      offload.onFail = () => worker.terminate();
      worker.addEventListener('error', (event) => {
        event.preventDefault();
        offload.fail(new Error(`the shard hash worker failed: ${event.message || 'it did not start'}`));
      });
      hashes = offload;
    } catch {
      hashes = 'failed';
      return onThisThread;
    }
  }
  const offload = hashes;
  return {
    stream: () => offload.stream(),
    backend: () => offload.backend ?? sha256Backend(),
    thread: 'hash worker',
  };
}

/** An engine's stage clocks so far (zero for one without them: the CPU engine). */
function stageTimings(engine: MergeEngine): StageTimings {
  return { upload: 0, compute: 0, readback: 0, ...engine.timings };
}

/** Whether merges read ahead and write behind (WorkerSettings.overlap): benchmarks compare. */
let overlap = true;

export function setOverlap(on: boolean): void {
  overlap = on;
}

/** What every worker job gets besides its request: its cancel signal and its progress channel. */
export interface JobContext {
  signal: AbortSignal;
  progress: (p: Progress) => void;
}

type Call<K extends keyof WorkerCalls> = (
  request: WorkerCalls[K]['request'],
  context: JobContext,
) => Promise<WorkerCalls[K]['result']>;

export const merge: Call<'merge'> = async (request, { signal, progress }) => {
  const started = performance.now();
  const readsBefore = readTotals();
  const writes = new StageClock();
  const picked = request.target;
  const base = model(request.base);
  const agents = await agentModels(base, request.agents);
  const needed = predictOutputBytes(base, agents, request.outDtype, BROWSER_SHARD_BYTES);
  // A recipe's gradients and filters, resolved per tensor as `merge --config` resolves them (a filter
  // that leaves a tensor without a required weight fails here, before any work).
  const settingsRecipe: Recipe | undefined = request.settings && {
    base: request.baseLabel,
    models: request.agentLabels,
    params: request.params,
    settings: request.settings,
    outDtype: request.outDtype,
    labels: true,
  };
  const perTensor = settingsRecipe && recipeResolver(settingsRecipe, [...base.tensors.keys()], 'the recipe');
  if (picked) await checkTarget(picked);
  else if (request.storage) checkStorage(request.storage, needed);
  let root: FileSystemDirectoryHandle | null = null;
  let dir: FileSystemDirectoryHandle;
  if (picked) dir = picked;
  else {
    root = await mergesRoot();
    dir = await claimFolder(root, request.folder);
    writing.add(request.folder);
  }
  // OPFS files are new and written in place (sync access handles); a picked folder gets streams.
  const out = timedFolder(directoryHandleFolder(dir, { syncAccess: !picked }), writes);
  const hashing = shardHashes();
  const inputs = [request.base, ...request.agents].map((slot, m) => ({
    label: m === 0 ? request.baseLabel : (request.agentLabels[m - 1] ?? slot),
    files: snapshot(slot),
  }));
  const unchanged = async (): Promise<void> => {
    for (const input of inputs) await checkUnchanged(input.label, input.files);
  };
  try {
    // The engine is held for the merge alone: what comes after it cannot cost a kept engine.
    const { result, description, warm, timings, windowCache } = await withEngine(
      request.agents.length,
      async (engine, warm) => {
        // A kept engine's stage clocks count its earlier jobs too.
        const before = stageTimings(engine);
        const cacheBefore = engine.windowCache;
        const budget = memoryBudget();
        const result = await mergeModels({
          base,
          agents,
          engine,
          params: request.params,
          outDtype: request.outDtype,
          ...(request.readDtype ? { readDtype: request.readDtype } : {}),
          shardBytes: BROWSER_SHARD_BYTES,
          out,
          baseLabel: request.baseLabel,
          agentLabels: request.agentLabels,
          ...(request.name === undefined ? {} : { name: request.name }),
          recipe: settingsRecipe,
          perTensor,
          analysis: recalledAnalysis(request.base, request.agents, request.params.epsilon, request.readDtype),
          // Awaited after the shards and before the model card, which makes a folder complete: an
          // input changed meanwhile fails the merge and the driver removes what it wrote.
          inputFiles: async () => {
            await unchanged();
            return [];
          },
          shardHash: hashing.stream,
          signal,
          onProgress: progress,
          overlap,
        });
        const after = stageTimings(engine);
        const timings: StageTimings = {
          upload: after.upload - before.upload,
          compute: after.compute - before.compute,
          readback: after.readback - before.readback,
        };
        const cacheAfter = engine.windowCache;
        const windowCache = cacheBefore &&
          cacheAfter && { ...windowCacheSince(cacheBefore, cacheAfter), memoryBudget: budget };
        return { result, description: engine.description, warm, timings, windowCache };
      },
    );
    const readsAfter = readTotals();
    const stages: MergeStages = {
      hash: hashing.backend(),
      hashThread: hashing.thread,
      warmEngine: warm,
      readMs: readsAfter.ms - readsBefore.ms,
      readBytes: readsAfter.bytes - readsBefore.bytes,
      ...(windowCache ? { windowCache } : {}),
      uploadMs: timings.upload,
      computeMs: timings.compute,
      readbackMs: timings.readback,
      writeMs: writes.ms,
      writeBytes: writes.bytes,
    };
    const recipeSource = await out.open('mergekit_config.yml');
    const recipe = new TextDecoder().decode(await recipeSource.read(0, recipeSource.size));
    return {
      folder: picked ? picked.name : request.folder,
      location: picked ? 'picked' : 'opfs',
      files: result.files,
      branches: result.branches,
      lambdas: result.lambdas,
      recipe,
      engine: description,
      elapsedMs: performance.now() - started,
      outputBytes: result.outputBytes,
      mergedTensors: result.mergedTensors,
      copiedTensors: result.copiedTensors,
      stages,
      ...(result.warnings.length ? { warnings: result.warnings } : {}),
    };
  } catch (error) {
    // The driver removed its files; an OPFS subfolder goes too, a picked folder stays (empty).
    await root?.removeEntry(request.folder, { recursive: true }).catch(() => undefined);
    // A read that failed because an input changed is reported as that change, naming the model.
    if (!isAbortError(error)) await unchanged();
    if (!picked && isQuotaError(error)) throw quotaFull(await storageEstimate(), needed, error);
    throw error;
  } finally {
    writing.delete(request.folder);
  }
};

/** navigator.storage.estimate() now, or undefined where the browser gives none. */
async function storageEstimate(): Promise<{ usage: number; quota: number } | undefined> {
  try {
    const estimate = await navigator.storage.estimate();
    return typeof estimate.quota === 'number'
      ? { usage: estimate.usage ?? 0, quota: estimate.quota }
      : undefined;
  } catch {
    return undefined;
  }
}

export const copy: Call<'copy'> = async ({ folder, target }, { signal }) => {
  const from = directoryHandleFolder(await (await mergesRoot()).getDirectoryHandle(folder));
  const to = directoryHandleFolder(target);
  const names = await from.list();
  for (const name of names) {
    throwIfAborted(signal, 'The copy was cancelled.');
    const source = await from.open(name);
    const sink = await to.create(name);
    try {
      const chunk = 8 << 20;
      for (let at = 0; at < source.size; at += chunk)
        await sink.write(await source.read(at, Math.min(chunk, source.size - at)));
      await sink.close();
    } catch (error) {
      await sink.abort();
      throw error;
    }
  }
  return names;
};

/** Throttles read-back progress to ten events a second at most. */
function throttled(progress: (p: Progress) => void): (p: Progress) => void {
  let sent = 0;
  return (p) => {
    const now = performance.now();
    if (now - sent < 100) return;
    sent = now;
    progress(p);
  };
}

export const readBack: Call<'readBack'> = async ({ target, files }, { signal, progress }) => {
  const folder = directoryHandleFolder(target);
  const present = new Set(await folder.list());
  const bytesTotal = files.reduce((sum, f) => sum + (f.sha256 && present.has(f.file) ? f.bytes : 0), 0);
  const started = performance.now();
  let bytesDone = 0;
  const report = throttled(progress);
  const checked: ReadBackFile[] = [];
  for (const [index, written] of files.entries()) {
    if (!present.has(written.file)) {
      checked.push({ ...written, foundBytes: null, ok: false });
      continue;
    }
    const source = await folder.open(written.file);
    const entry: ReadBackFile = { ...written, foundBytes: source.size, ok: source.size === written.bytes };
    if (written.sha256 !== undefined) {
      // On the shard hash worker too, beside the next read.
      const hash = shardHashes().stream();
      try {
        const chunk = 8 << 20;
        for (let at = 0; at < source.size; at += chunk) {
          throwIfAborted(signal, 'The read-back was cancelled.');
          const bytes = await source.read(at, Math.min(chunk, source.size - at));
          await hash.update(bytes);
          bytesDone += bytes.length;
          const elapsedMs = performance.now() - started;
          const bytesPerSecond = elapsedMs > 0 ? (bytesDone / elapsedMs) * 1000 : 0;
          report({
            stage: 'verify',
            tensorsDone: index,
            tensorsTotal: files.length,
            bytesDone,
            bytesTotal,
            currentTensor: written.file,
            elapsedMs,
            bytesPerSecond,
            etaMs: bytesPerSecond > 0 ? ((bytesTotal - bytesDone) / bytesPerSecond) * 1000 : undefined,
          });
        }
        entry.foundSha256 = await hash.hex();
      } catch (error) {
        hash.drop?.();
        throw error;
      }
      entry.ok &&= entry.foundSha256 === written.sha256;
    }
    checked.push(entry);
  }
  const written = new Set(files.map((f) => f.file));
  const extra = [...present].filter((name) => !written.has(name));
  return { files: checked, extra, ok: extra.length === 0 && checked.every((f) => f.ok) };
};

// The studio's engine host, run as a dedicated Web Worker: it opens checkpoints from Blobs or demo
// URLs, owns the GPU device (or the CPU reference when there is none), runs statistics, merges into
// OPFS or straight into a folder the user picked, reads merged files back, runs the arena, and posts
// plain data and throttled progress back. No GPU object and no weight byte ever reaches the page.
import { lockDownNetwork } from './network-lockdown.ts';
import { evaluate, modelDemoTensors } from '../demo/arena.ts';
import type { DemoModelConfig } from '../demo/policy.ts';
import { checkCompatibility, type CompatReport } from '../format/compat.ts';
import { decodeFloats, dtypeBits, isMergeableDtype, type FloatDtype } from '../format/dtype.ts';
import { SafetensorsError } from '../io/errors.ts';
import { formatBytes } from '../format/inspect.ts';
import { ADAPTER_CONFIG, adapterMessage, detectAdapter } from '../format/peft.ts';
import { openModel, type Model } from '../format/model.ts';
import { summarizeCompat, summarizeModel } from './model-transfer.ts';
import { BRANCHES_FILE, mergeBranches } from './merge-branches.ts';
import {
  blobSource,
  checkUnchanged,
  directoryHandleFiles,
  directoryHandleFolder,
  fileSnapshot,
  type FileSnapshot,
} from '../io/browser.ts';
import type { ByteSource, ModelFile } from '../io/source.ts';
import { createCpuEngine } from './cpu-engine.ts';
import { sampleDerivation } from './derivation.ts';
import { describeAdapter, requestEngineDevice, type EngineDevice, type EngineLimits } from './device.ts';
import {
  analyzeModels,
  CompatibilityError,
  mergeableTensors,
  MergeError,
  mergeModels,
  predictOutputBytes,
  BROWSER_SHARD_BYTES,
  writeText,
  type AnalysisResult,
  type Progress,
} from './driver.ts';
import { EngineTensorError } from '../methods/errors.ts';
import { explainElement, InspectHost } from './inspect.ts';
import { listLibrary } from './library.ts';
import { statsFiles } from './stats-json.ts';
import { Sha256 } from '../io/sha256.ts';
import { createGpuEngine, DEFAULT_WINDOW_ELEMENTS } from './gpu-engine.ts';
import { runSelfTest } from './self-test.ts';
import {
  DEMO_MODEL_TYPE,
  MERGES_FOLDER,
  type ArenaTarget,
  type CompareReport,
  type DerivationReport,
  type EngineInfo,
  type FileRef,
  type MemoryEstimate,
  type ReadBackFile,
  type WorkerCall,
  type WorkerCalls,
  type WorkerErrorInfo,
  type WorkerReply,
  type WorkerRequest,
} from './worker-protocol.ts';
import type { MergeEngine } from '../methods/merge-types.ts';

// First: no network primitive stays usable in this worker (src/engine/network-lockdown.ts).
const ownOriginFetch = lockDownNetwork(self as unknown as Parameters<typeof lockDownNetwork>[0]);

const models = new Map<string, Model>();
// The newest open per slot: an older open that finishes later must not replace the newer model.
const opening = new Map<string, number>();
let nextOpen = 1;
const jobs = new Map<number, AbortController>();
let device: Promise<EngineDevice | { error: string }> | null = null;
let cachedAnalysis: { key: string; result: AnalysisResult } | null = null;
let readDelayMs = 0;
const inspectHost = new InspectHost();
// OPFS folders a merge is writing now: the library must not delete them under the merge.
const writing = new Set<string>();
// Per loaded slot: its label and files as they were when opened, checked again before a merge is kept.
const snapshots = new Map<string, FileSnapshot[]>();

function reply(message: WorkerReply): void {
  postMessage(message);
}

function errorInfo(error: unknown): WorkerErrorInfo {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const info: WorkerErrorInfo = { name: error.name, message: error.message };
  if (error instanceof SafetensorsError) {
    info.file = error.file;
    info.code = error.code;
    if (error.tensor !== undefined) info.tensor = error.tensor;
  }
  if (error instanceof MergeError && error.tensor !== undefined) info.tensor = error.tensor;
  if (error instanceof EngineTensorError) info.tensor = error.tensor;
  if (error instanceof CompatibilityError) info.compat = error.report;
  const named = (error as { file?: unknown }).file;
  if (typeof named === 'string') info.file ??= named;
  // The driver wraps engine failures; the innermost file or tensor name is the useful one.
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof SafetensorsError) {
    info.file ??= cause.file;
    info.code ??= cause.code;
  }
  return info;
}

/** A source whose reads wait first: only the e2e tests turn it on, to have time to cancel. */
function delayed(source: ByteSource): ByteSource {
  return {
    name: source.name,
    size: source.size,
    async read(offset, length, into) {
      if (readDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, readDelayMs));
      return source.read(offset, length, into);
    },
  };
}

async function modelFiles(files: FileRef[]): Promise<{ name: string; blob: Blob }[]> {
  return Promise.all(
    files.map(async (ref) => {
      let blob: Blob;
      if ('blob' in ref) blob = ref.blob;
      else {
        const response = await ownOriginFetch(ref.url);
        if (!response.ok)
          throw new SafetensorsError(
            'ReadFailed',
            ref.name,
            `fetching ${ref.url} answered ${response.status}.`,
          );
        blob = await response.blob();
      }
      return { name: ref.name, blob };
    }),
  );
}

/** A PEFT adapter picked as a model: one error that says what it is and what to load instead. */
function adapterRefusal(message: string, file: string): Error {
  const error = refusal('PeftAdapter', message);
  return Object.assign(error, { file });
}

/** Opens a model, unless its files are a PEFT adapter (by adapter_config.json or tensor names). */
async function openAdapterAware(label: string, files: ModelFile[]): Promise<Model> {
  const configFile = files.find((f) => f.name === ADAPTER_CONFIG);
  const config = configFile
    ? {
        text: new TextDecoder().decode(
          await configFile.source.read(0, Math.min(configFile.source.size, 1 << 20)),
        ),
      }
    : null;
  let opened: Model;
  try {
    opened = await openModel(label, files);
  } catch (error) {
    // An adapter folder often holds several checkpoints' weights: the config alone says what it is.
    const adapter = config ? detectAdapter(config, []) : null;
    if (adapter) throw adapterRefusal(adapterMessage(adapter, label), ADAPTER_CONFIG);
    throw error;
  }
  const weights = opened.shards[0]?.file;
  const adapter = detectAdapter(config, [...opened.tensors.values()], weights);
  if (adapter) throw adapterRefusal(adapterMessage(adapter, label), adapter.evidence);
  return opened;
}

/** A loaded model, a merge in OPFS, or a merge in a picked folder. */
async function openTarget(target: ArenaTarget): Promise<Model> {
  if ('slot' in target) return model(target.slot);
  if ('handle' in target) return openModel(target.handle.name, await directoryHandleFiles(target.handle));
  const dir = await (await mergesRoot()).getDirectoryHandle(target.folder);
  return openModel(target.folder, await directoryHandleFiles(dir));
}

/** Elements compared per read: two windows of at most this many values are held at once. */
const COMPARE_WINDOW = 1 << 20;

/** Counts, per common tensor, the elements whose values differ (across dtypes, by value). */
async function compareModels(a: Model, b: Model, signal: AbortSignal): Promise<CompareReport> {
  const tensors: CompareReport['tensors'] = [];
  const unmatched: string[] = [];
  for (const [name, x] of a.tensors) {
    const y = b.tensors.get(name);
    const same =
      y !== undefined &&
      isMergeableDtype(x.dtype) &&
      isMergeableDtype(y.dtype) &&
      x.shape.length === y.shape.length &&
      x.shape.every((d, i) => d === y.shape[i]);
    if (!same || !y) {
      unmatched.push(name);
      continue;
    }
    const numel = x.shape.reduce((p, d) => p * d, 1);
    const xw = dtypeBits(x.dtype) / 8;
    const yw = dtypeBits(y.dtype) / 8;
    let differ = 0;
    for (let at = 0; at < numel; at += COMPARE_WINDOW) {
      signal.throwIfAborted();
      const count = Math.min(COMPARE_WINDOW, numel - at);
      const [xb, yb] = await Promise.all([
        a.source(x.file).read(x.offset + at * xw, count * xw),
        b.source(y.file).read(y.offset + at * yw, count * yw),
      ]);
      const xv = decodeFloats(x.dtype as FloatDtype, xb, count);
      const yv = decodeFloats(y.dtype as FloatDtype, yb, count);
      for (let i = 0; i < count; i++) if (!Object.is(xv[i], yv[i])) differ++;
    }
    tensors.push({ name, numel, differ });
  }
  for (const name of b.tensors.keys()) if (!a.tensors.has(name)) unmatched.push(name);
  return { tensors, unmatched };
}

function model(slot: string): Model {
  const found = models.get(slot);
  if (!found) throw new Error(`No model is loaded in slot ${slot}; load it again.`);
  return found;
}

function acquireDevice(): Promise<EngineDevice | { error: string }> {
  device ??= (async () => {
    const gpu = (navigator as { gpu?: GPU }).gpu;
    if (!gpu) return { error: 'this browser offers no WebGPU inside a Web Worker' };
    try {
      return await requestEngineDevice(gpu, {
        // A lost device is requested afresh by the next job.
        onLost: () => {
          device = null;
        },
      });
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  })();
  return device;
}

async function engineInfo(): Promise<EngineInfo> {
  const found = await acquireDevice();
  if ('error' in found)
    return { kind: 'cpu', description: 'CPU reference (no GPU)', limits: null, fallbackReason: found.error };
  return {
    kind: 'gpu',
    description: describeAdapter(found.adapterInfo),
    limits: found.limits,
    fallbackReason: null,
  };
}

async function createEngine(agents: number): Promise<MergeEngine> {
  const found = await acquireDevice();
  if ('error' in found) return createCpuEngine({ agents });
  return createGpuEngine(found.device, { agents, adapterDescription: describeAdapter(found.adapterInfo) });
}

function estimateMemory(
  base: Model,
  report: CompatReport,
  agents: number,
  limits: EngineLimits | null,
): MemoryEstimate {
  const tensors = report.ok ? mergeableTensors(base, report) : [];
  let inputBytes = 0;
  let outputBytes = 0;
  let largest = 0;
  let widest = 2;
  for (const t of tensors) {
    inputBytes += (t.end - t.begin) * (agents + 1);
    outputBytes += t.end - t.begin;
    largest = Math.max(
      largest,
      t.shape.reduce((a, b) => a * b, 1),
    );
    widest = Math.max(widest, dtypeBits(t.dtype as FloatDtype) / 8);
  }
  const binding = limits ? Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize) : 128 << 20;
  const byBinding = Math.floor(binding / (agents + 1) / widest);
  const windowElements = Math.max(0, Math.min(largest, DEFAULT_WINDOW_ELEMENTS, byBinding));
  // Two window sets in flight, each with inputs, an output and its readback copy.
  const gpuBytes = 2 * windowElements * widest * (agents + 1 + 2);
  return { mergedTensors: tensors.length, inputBytes, outputBytes, windowElements, gpuBytes };
}

async function mergesRoot(): Promise<FileSystemDirectoryHandle> {
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle(MERGES_FOLDER, { create: true });
}

/**
 * Creates the merge's OPFS subfolder, refusing a name that exists: OPFS has no exclusive create, so
 * the page makes names that cannot collide and this catches the one that does anyway.
 */
async function claimFolder(
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
function checkStorage(storage: { usage: number; quota: number }, needed: number): void {
  const free = Math.max(0, storage.quota - storage.usage);
  if (needed <= free) return;
  throw refusal(
    'InsufficientStorage',
    `The merge needs about ${formatBytes(needed)} of browser storage, but only ${formatBytes(free)} is free ` +
      `(quota ${formatBytes(storage.quota)}, ${formatBytes(storage.usage)} used), so nothing was written. ` +
      'Delete merges from the library, or use Merge into a folder… to write to disk.',
  );
}

/** A failure the page shows as it is: its name is the kind of refusal, its message says what to do. */
function refusal(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

type PermissionHandle = FileSystemDirectoryHandle & {
  queryPermission?: (descriptor: { mode: 'read' | 'readwrite' }) => Promise<PermissionState>;
};

/** Refuses a picked folder the worker may not write, or one that already holds anything. */
async function checkTarget(target: FileSystemDirectoryHandle): Promise<void> {
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

function analysisKey(base: string, agents: string[], epsilon: number): string {
  return JSON.stringify([base, agents, epsilon]);
}

type Handlers = {
  [K in WorkerCall]: (
    request: WorkerCalls[K]['request'],
    context: { signal: AbortSignal; progress: (p: Progress) => void },
  ) => Promise<WorkerCalls[K]['result']>;
};

const handlers: Handlers = {
  async open({ slot, label, files }) {
    const mine = nextOpen++;
    opening.set(slot, mine);
    models.delete(slot);
    snapshots.delete(slot);
    cachedAnalysis = null;
    const blobs = await modelFiles(files);
    const opened = await openAdapterAware(
      label,
      blobs.map(({ name, blob }) => ({ name, source: delayed(blobSource(blob, name)) })),
    );
    if (opening.get(slot) !== mine)
      throw refusal('AbortError', `${label} was replaced by a newer choice for the same place.`);
    models.set(slot, opened);
    snapshots.set(
      slot,
      blobs.map(({ name, blob }) => fileSnapshot(name, blob)),
    );
    return summarizeModel(opened);
  },
  async close({ slot }) {
    opening.delete(slot);
    models.delete(slot);
    snapshots.delete(slot);
    cachedAnalysis = null;
    return null;
  },
  async check({ base, agents }, { signal }) {
    const baseModel = model(base);
    const compat = checkCompatibility(baseModel, agents.map(model));
    const engine = await engineInfo();
    // A sample that cannot be read (a truncated file) is reported for that agent alone.
    const derivation = await Promise.all(
      agents.map(async (slot): Promise<DerivationReport> => {
        try {
          return { slot, sample: await sampleDerivation(baseModel, model(slot), { signal }) };
        } catch (error) {
          return { slot, error: errorInfo(error) };
        }
      }),
    );
    return {
      compat: summarizeCompat(compat),
      engine,
      memory: estimateMemory(baseModel, compat, agents.length, engine.limits),
      derivation,
    };
  },
  async analyze({ base, agents, epsilon }, { signal, progress }) {
    const engine = await createEngine(agents.length);
    try {
      const result = await analyzeModels({
        base: model(base),
        agents: agents.map(model),
        engine,
        epsilon,
        signal,
        onProgress: progress,
      });
      // The files' identities let an exported JSON serve `merge --stats-in` as analyze's does.
      const files = await statsFiles([model(base), ...agents.map(model)]);
      cachedAnalysis = { key: analysisKey(base, agents, epsilon), result };
      return { ...result, files };
    } finally {
      engine.destroy();
    }
  },
  async merge(request, { signal, progress }) {
    const started = performance.now();
    const picked = request.target;
    const base = model(request.base);
    const agents = request.agents.map(model);
    if (picked) await checkTarget(picked);
    else if (request.storage)
      checkStorage(request.storage, predictOutputBytes(base, agents, request.outDtype, BROWSER_SHARD_BYTES));
    const root = picked ? null : await mergesRoot();
    const dir = picked ?? (await claimFolder(root!, request.folder));
    if (!picked) writing.add(request.folder);
    const out = directoryHandleFolder(dir);
    const engine = await createEngine(request.agents.length);
    const key = analysisKey(request.base, request.agents, request.params.epsilon);
    const inputs = [request.base, ...request.agents].map((slot, m) => ({
      label: m === 0 ? request.baseLabel : (request.agentLabels[m - 1] ?? slot),
      files: snapshots.get(slot) ?? [],
    }));
    const unchanged = async (): Promise<void> => {
      for (const input of inputs) await checkUnchanged(input.label, input.files);
    };
    try {
      const result = await mergeModels({
        base,
        agents,
        engine,
        params: request.params,
        outDtype: request.outDtype,
        shardBytes: BROWSER_SHARD_BYTES,
        out,
        baseLabel: request.baseLabel,
        agentLabels: request.agentLabels,
        analysis: cachedAnalysis?.key === key ? cachedAnalysis.result : undefined,
        // Awaited after the shards and before the model card, which makes a folder complete: an
        // input changed meanwhile fails the merge and the driver removes what it wrote.
        inputFiles: async () => {
          await unchanged();
          return [];
        },
        signal,
        onProgress: progress,
      });
      const recipeSource = await out.open('mergekit_config.yml');
      const recipe = new TextDecoder().decode(await recipeSource.read(0, recipeSource.size));
      const branches = result.analysis
        ? mergeBranches(result.analysis.epsilon, request.agentLabels, result.analysis.totals)
        : null;
      // After the card: a folder without it is still complete, its branches just unknown.
      if (branches)
        await writeText(out, BRANCHES_FILE, `${JSON.stringify(branches, null, 2)}\n`, result.files);
      return {
        folder: picked ? picked.name : request.folder,
        location: picked ? 'picked' : 'opfs',
        files: result.files,
        branches,
        lambdas: result.lambdas,
        recipe,
        engine: engine.description,
        elapsedMs: performance.now() - started,
        outputBytes: result.outputBytes,
        mergedTensors: result.mergedTensors,
        copiedTensors: result.copiedTensors,
      };
    } catch (error) {
      // The driver removed its files; an OPFS subfolder goes too, a picked folder stays (empty).
      await root?.removeEntry(request.folder, { recursive: true }).catch(() => undefined);
      // A read that failed because an input changed is reported as that change, naming the model.
      if (!(error instanceof Error && error.name === 'AbortError')) await unchanged();
      throw error;
    } finally {
      writing.delete(request.folder);
      engine.destroy();
    }
  },
  async copy({ folder, target }, { signal }) {
    const from = directoryHandleFolder(await (await mergesRoot()).getDirectoryHandle(folder));
    const to = directoryHandleFolder(target);
    const names = await from.list();
    for (const name of names) {
      if (signal.aborted) throw new DOMException('The copy was cancelled', 'AbortError');
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
  },
  async readBack({ target, files }, { signal, progress }) {
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
        const hash = new Sha256();
        const chunk = 8 << 20;
        for (let at = 0; at < source.size; at += chunk) {
          if (signal.aborted) throw new DOMException('The read-back was cancelled', 'AbortError');
          const bytes = await source.read(at, Math.min(chunk, source.size - at));
          hash.update(bytes);
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
        entry.foundSha256 = hash.hex();
        entry.ok &&= entry.foundSha256 === written.sha256;
      }
      checked.push(entry);
    }
    const written = new Set(files.map((f) => f.file));
    const extra = [...present].filter((name) => !written.has(name));
    return { files: checked, extra, ok: extra.length === 0 && checked.every((f) => f.ok) };
  },
  async arena({ target, episodes }) {
    const subject = await openTarget(target);
    if (subject.config?.model_type !== DEMO_MODEL_TYPE)
      throw new Error(
        `${subject.name} is not of the demo architecture (config.json model_type is not ${DEMO_MODEL_TYPE}), so the arena cannot play it.`,
      );
    const result = evaluate(
      await modelDemoTensors(subject),
      subject.config as unknown as DemoModelConfig,
      episodes === undefined ? {} : { episodes },
    );
    return { tasks: result.tasks.map((t) => ({ ...t })), mean: result.mean };
  },
  async compare({ a, b }, { signal }) {
    return compareModels(await openTarget(a), await openTarget(b), signal);
  },
  async library() {
    return listLibrary(await mergesRoot());
  },
  async deleteMerge({ folder }) {
    if (writing.has(folder))
      throw refusal('MergeRunning', `merges/${folder} is being written by a running merge: cancel it first.`);
    const root = await mergesRoot();
    try {
      await root.removeEntry(folder, { recursive: true });
    } catch (error) {
      if (error instanceof Error && error.name === 'NotFoundError') return null;
      throw error;
    }
    return null;
  },
  async configure({ readDelayMs: delay }) {
    readDelayMs = Math.max(0, delay);
    return null;
  },
  async selfTest() {
    const found = await acquireDevice();
    if ('error' in found) throw new Error(`The engine has no GPU device: ${found.error}.`);
    return runSelfTest(found.device, describeAdapter(found.adapterInfo));
  },
  async maskCanvas({ canvas }) {
    inspectHost.attach(canvas);
    return null;
  },
  async maskView(call, { signal }) {
    const found = await acquireDevice();
    if ('error' in found)
      throw refusal('NoWebGPU', `The tensor view draws on WebGPU, which this worker lacks: ${found.error}.`);
    return inspectHost.maskView(found.device, model(call.base), call.agents.map(model), call, signal);
  },
  async explain({ base, agents, params, outDtype, tensor, index }, { signal }) {
    const engine = await createEngine(agents.length);
    const key = analysisKey(base, agents, params.epsilon);
    try {
      return await explainElement({
        base: model(base),
        agents: agents.map(model),
        engine,
        params,
        outDtype,
        tensor,
        index,
        analysis: cachedAnalysis?.key === key ? cachedAnalysis.result : undefined,
        signal,
      });
    } finally {
      engine.destroy();
    }
  },
};

async function run(request: Exclude<WorkerRequest, { kind: 'cancel' }>): Promise<void> {
  const controller = new AbortController();
  jobs.set(request.id, controller);
  const { kind, id, ...fields } = request;
  try {
    const handler = handlers[kind] as (
      request: typeof fields,
      context: { signal: AbortSignal; progress: (p: Progress) => void },
    ) => Promise<unknown>;
    const result = await handler(fields, {
      signal: controller.signal,
      progress: (progress) => reply({ kind: 'progress', id, progress }),
    });
    reply({ kind: 'done', id, result });
  } catch (error) {
    reply({ kind: 'error', id, error: errorInfo(error) });
  } finally {
    jobs.delete(id);
  }
}

addEventListener('message', (event: MessageEvent<WorkerRequest>) => {
  const request = event.data;
  if (request.kind === 'cancel') jobs.get(request.id)?.abort();
  else void run(request);
});

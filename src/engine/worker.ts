// The studio's engine host, run as a dedicated Web Worker: it opens checkpoints from Blobs or demo
// URLs, owns the GPU device (or the CPU reference when there is none), runs statistics, merges into
// OPFS or straight into a folder the user picked, reads merged files back, runs the arena, and posts
// plain data and throttled progress back. No GPU object and no weight byte ever reaches the page.
import { lockDownNetwork } from './network-lockdown.ts';
import { evaluate, modelDemoTensors } from '../demo/arena.ts';
import type { DemoModelConfig } from '../demo/policy.ts';
import { checkCompatibility, type CompatReport } from '../format/compat.ts';
import { dtypeBits, type FloatDtype } from '../format/dtype.ts';
import { SafetensorsError } from '../format/errors.ts';
import { inspectModel, type InspectReport } from '../format/inspect.ts';
import { openModel, type Model, type ModelFile } from '../format/model.ts';
import { blobSource, directoryHandleFiles, directoryHandleFolder } from '../io/browser.ts';
import type { ByteSource } from '../io/source.ts';
import { createCpuEngine } from '../methods/cpu-engine.ts';
import type { MethodParams } from '../methods/types.ts';
import { sampleDerivation, type DerivationSample } from './derivation.ts';
import { describeAdapter, requestEngineDevice, type EngineDevice, type EngineLimits } from './device.ts';
import {
  analyzeModels,
  CompatibilityError,
  mergeableTensors,
  MergeError,
  mergeModels,
  BROWSER_SHARD_BYTES,
  type AnalysisResult,
  type Progress,
  type WrittenFile,
} from './driver.ts';
import { EngineTensorError } from './errors.ts';
import { Sha256 } from './sha256.ts';
import { createGpuEngine, DEFAULT_WINDOW_ELEMENTS } from './gpu-engine.ts';
import type { MergeEngine } from './types.ts';
import { DEMO_MODEL_TYPE, MERGES_FOLDER } from './worker-client.ts';

// First: no network primitive stays usable in this worker (src/engine/network-lockdown.ts).
const ownOriginFetch = lockDownNetwork(self as unknown as Parameters<typeof lockDownNetwork>[0]);

/** Model folders of the demo are fetched by the worker itself, from the app's own origin. */
export type FileRef = { name: string; blob: Blob } | { name: string; url: string };

/** A loaded model, a merge in OPFS `merges/`, or a merge written into a picked folder. */
export type ArenaTarget = { slot: string } | { folder: string } | { handle: FileSystemDirectoryHandle };

export interface EngineInfo {
  kind: 'gpu' | 'cpu';
  description: string;
  limits: EngineLimits | null;
  /** Why the GPU is not used, when kind is 'cpu'. */
  fallbackReason: string | null;
}

export interface MemoryEstimate {
  mergedTensors: number;
  /** Bytes read per full pass over the merged tensors (base + agents). */
  inputBytes: number;
  /** Bytes the merged model takes in OPFS (tensor data, headers excluded). */
  outputBytes: number;
  /** Elements per GPU window for the largest tensor. */
  windowElements: number;
  /** Approximate GPU buffer memory of the two in-flight window sets. */
  gpuBytes: number;
}

/** Per agent: the bit-identical share of a small sample against the base, or why it could not be read. */
export type DerivationReport =
  | { slot: string; sample: DerivationSample; error?: undefined }
  | { slot: string; sample?: undefined; error: WorkerErrorInfo };

export interface CheckReport {
  compat: CompatReport;
  engine: EngineInfo;
  memory: MemoryEstimate;
  /** In the order of the request's agents. */
  derivation: DerivationReport[];
}

export interface MergeRequest {
  base: string;
  agents: string[];
  params: MethodParams;
  outDtype?: FloatDtype;
  /** Name of the new subfolder of OPFS `merges/` the merge is written to, when there is no target. */
  folder: string;
  /** A folder the user picked: the merge streams straight into it, which must be empty. */
  target?: FileSystemDirectoryHandle;
  baseLabel: string;
  agentLabels: string[];
}

export interface MergeSummary {
  /** The OPFS subfolder of `merges/`, or the picked folder's name. */
  folder: string;
  location: 'opfs' | 'picked';
  files: WrittenFile[];
  lambdas: number[];
  recipe: string;
  engine: string;
  elapsedMs: number;
  outputBytes: number;
  mergedTensors: number;
  copiedTensors: number;
}

export interface ArenaScores {
  tasks: { name: string; score: number; episodes: number }[];
  mean: number;
}

/** One merged file as read back from its folder, against what the driver reported writing. */
export interface ReadBackFile {
  file: string;
  /** Bytes the driver wrote. */
  bytes: number;
  /** Bytes found in the folder; null when the file is missing. */
  foundBytes: number | null;
  /** The driver's checksum (shards only). */
  sha256?: string;
  /** The checksum of the bytes read back, where the driver reported one. */
  foundSha256?: string;
  ok: boolean;
}

export interface ReadBackReport {
  files: ReadBackFile[];
  /** Files in the folder the merge did not write (none expected in a folder that started empty). */
  extra: string[];
  ok: boolean;
}

/** Every call the worker answers: its request fields and its result. */
export interface WorkerCalls {
  open: { request: { slot: string; label: string; files: FileRef[] }; result: InspectReport };
  close: { request: { slot: string }; result: null };
  check: { request: { base: string; agents: string[] }; result: CheckReport };
  analyze: { request: { base: string; agents: string[]; epsilon: number }; result: AnalysisResult };
  merge: { request: MergeRequest; result: MergeSummary };
  copy: { request: { folder: string; target: FileSystemDirectoryHandle }; result: string[] };
  readBack: { request: { target: FileSystemDirectoryHandle; files: WrittenFile[] }; result: ReadBackReport };
  arena: { request: { target: ArenaTarget; episodes?: number }; result: ArenaScores };
  configure: { request: { readDelayMs: number }; result: null };
}

export type WorkerCall = keyof WorkerCalls;

export type WorkerRequest =
  | { [K in WorkerCall]: { kind: K; id: number } & WorkerCalls[K]['request'] }[WorkerCall]
  | { kind: 'cancel'; id: number };

/** A failure as plain data, naming the file and tensor where the error knows them. */
export interface WorkerErrorInfo {
  name: string;
  message: string;
  file?: string;
  tensor?: string;
  code?: string;
  compat?: CompatReport;
}

export type WorkerReply =
  | { kind: 'progress'; id: number; progress: Progress }
  | { kind: 'done'; id: number; result: unknown }
  | { kind: 'error'; id: number; error: WorkerErrorInfo };

const models = new Map<string, Model>();
const jobs = new Map<number, AbortController>();
let device: Promise<EngineDevice | { error: string }> | null = null;
let cachedAnalysis: { key: string; result: AnalysisResult } | null = null;
let readDelayMs = 0;

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

async function modelFiles(files: FileRef[]): Promise<ModelFile[]> {
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
      return { name: ref.name, source: delayed(blobSource(blob, ref.name)) };
    }),
  );
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
    models.delete(slot);
    cachedAnalysis = null;
    const opened = await openModel(label, await modelFiles(files));
    models.set(slot, opened);
    return inspectModel(opened);
  },
  async close({ slot }) {
    models.delete(slot);
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
      compat,
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
      cachedAnalysis = { key: analysisKey(base, agents, epsilon), result };
      return result;
    } finally {
      engine.destroy();
    }
  },
  async merge(request, { signal, progress }) {
    const started = performance.now();
    const picked = request.target;
    if (picked) await checkTarget(picked);
    const root = picked ? null : await mergesRoot();
    const dir = picked ?? (await root!.getDirectoryHandle(request.folder, { create: true }));
    const out = directoryHandleFolder(dir);
    const engine = await createEngine(request.agents.length);
    const key = analysisKey(request.base, request.agents, request.params.epsilon);
    try {
      const result = await mergeModels({
        base: model(request.base),
        agents: request.agents.map(model),
        engine,
        params: request.params,
        outDtype: request.outDtype,
        shardBytes: BROWSER_SHARD_BYTES,
        out,
        baseLabel: request.baseLabel,
        agentLabels: request.agentLabels,
        analysis: cachedAnalysis?.key === key ? cachedAnalysis.result : undefined,
        signal,
        onProgress: progress,
      });
      const recipeSource = await out.open('mergekit_config.yml');
      const recipe = new TextDecoder().decode(await recipeSource.read(0, recipeSource.size));
      return {
        folder: picked ? picked.name : request.folder,
        location: picked ? 'picked' : 'opfs',
        files: result.files,
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
      throw error;
    } finally {
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
    let subject: Model;
    if ('slot' in target) subject = model(target.slot);
    else if ('handle' in target)
      subject = await openModel(target.handle.name, await directoryHandleFiles(target.handle));
    else {
      const dir = await (await mergesRoot()).getDirectoryHandle(target.folder);
      subject = await openModel(target.folder, await directoryHandleFiles(dir));
    }
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
  async configure({ readDelayMs: delay }) {
    readDelayMs = Math.max(0, delay);
    return null;
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

// The engine worker's protocol: every call, its request and result, and the messages both sides post.
// The worker (worker.ts) and the page's client (worker-client.ts) both import this file and not each
// other, so the worker stays an entry of its own and the page never loads worker code.
import type { Sha256Backend } from '../io/sha256.ts';
import type { CompatColumns, CompatReport } from '../format/compat.ts';
import type { FloatDtype } from '../format/dtype.ts';
import type { ReadDtype } from '../format/precision.ts';
import type { ReadPrecisionFacts } from '../driver/read-precision.ts';
import type { MethodParams } from '../methods/types.ts';
import type { DerivationSample } from '../driver/derivation.ts';
import type { EngineLimits } from '../engine/gpu/device.ts';
import type { AnalysisResult, Progress, WrittenFile } from '../driver/job.ts';
import type { ElementExplanation, ExplainCall, MaskViewCall, MaskViewResult } from '../driver/tensor-view.ts';
import type { LibraryEntry } from '../driver/library.ts';
import type { RecipeSettings } from '../methods/recipe.ts';
import type { MergeBranches } from '../driver/merge-branches.ts';
import type { WindowCacheReport } from '../engine/contract.ts';
import type { ModelSummary } from '../driver/model-transfer.ts';
import type { ProbeResult } from './probe.ts';
import type { EvalProgress } from '../eval/evaluate.ts';
import type { EvalModelRef, EvalResult } from '../eval/types.ts';

export type { EvalExample, EvalModelRef, EvalResult, EvalSet } from '../eval/types.ts';

/** The engine's default memory budget, which the studio's engine card starts from (src/engine/gpu/plumbing.ts). */
export { DEFAULT_MEMORY_BUDGET } from '../engine/gpu/plumbing.ts';

/** OPFS folder under which every merge gets its own subfolder. */
export const MERGES_FOLDER = 'merges';
/** config.json model_type of the demo architecture, the one the arena can play. */
export const DEMO_MODEL_TYPE = 'merge-studio-gridworld-mlp';

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
  /** Bytes of the two in-flight window sets: GPU buffers and their staging copies (windowMemory). */
  gpuBytes: number;
  /**
   * The most the driver holds beside them (driverMemory): the next tensor's first window of every
   * model, read while this one merges, output queued for storage and copies of it on their way to the
   * shard hash worker; for these models, so no more than their largest tensor and their output.
   */
  driverBytes: number;
  /** The memory budget the window buffers and the driver's bytes are sized to stay within together. */
  budgetBytes: number;
  /**
   * Windows the budget has room to keep on the GPU between a counting pass and the merge
   * (src/engine/gpu/window-cache.ts), and their bytes: TIES, Breadcrumbs and tensor-local RAM+
   * read a tensor of up to keptWindows + 2 windows once.
   */
  keptWindows: number;
  keptBytes: number;
  /** Windows of the largest tensor. */
  largestWindows: number;
  /** Tensors those methods read some windows of twice: more than keptWindows + 2 windows. */
  rereadTensors: number;
  /** The smallest budget whose kept windows let those methods read the largest tensor once. */
  readOnceBudget: number;
}

/** The memory budgets the engine card offers (bytes): the default, 512 MiB, and larger ones for GPUs with room. */
export const MEMORY_BUDGETS: readonly number[] = [512, 1024, 2048, 4096].map((m) => m * 2 ** 20);

/** Per agent: the bit-identical share of a small sample against the base, or why it could not be read. */
export type DerivationReport =
  | { slot: string; sample: DerivationSample; error?: undefined }
  | { slot: string; sample?: undefined; error: WorkerErrorInfo };

export interface CheckReport {
  /** Its issues in columns (model-transfer.ts): a 300k-tensor mismatch would be 300k objects. */
  compat: CompatColumns;
  engine: EngineInfo;
  memory: MemoryEstimate;
  /** In the order of the request's agents. */
  derivation: DerivationReport[];
  /** Per LoRA adapter agent's slot: its notes over this base (a base_model_name_or_path that differs). */
  adapterNotes: Record<string, string[]>;
  /** The set's stored dtypes, for the "compare at" control and the recipe's dtype. */
  precision: ReadPrecisionFacts;
}

/** The statistics pass's request: the models by slot, ε, the read precision and the agents' labels. */
export interface AnalyzeRequest {
  base: string;
  agents: string[];
  epsilon: number;
  /** Absent: the default read precision. */
  readDtype?: ReadDtype;
  /** The agents' names in the precision lines (as `analyze` names them by their folders). */
  labels?: string[];
}

export interface MergeRequest {
  base: string;
  agents: string[];
  params: MethodParams;
  outDtype?: FloatDtype;
  /** The read precision D (the studio's "compare at"); absent: the default, as the CLI's --read-dtype. */
  readDtype?: ReadDtype;
  /** Name of the new subfolder of OPFS `merges/` the merge is written to, when there is no target. */
  folder: string;
  /** A folder the user picked: the merge streams straight into it, which must be empty. */
  target?: FileSystemDirectoryHandle;
  baseLabel: string;
  agentLabels: string[];
  /** The merge's name: the model card's title. */
  name?: string;
  /** The browser's storage estimate, for a merge into OPFS: refused before any work if it does not fit. */
  storage?: { usage: number; quota: number };
  /**
   * A recipe's per-tensor settings (gradients, filters; mergekit keys, agents in merge order), resolved
   * per tensor by the CLI's resolver (src/methods/resolve.ts) and written into mergekit_config.yml.
   */
  settings?: RecipeSettings;
}

export type { LibraryEntry };

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
  /** Elements per branch, as in merge_branches.json (counted in the merge, or its statistics); null without. */
  branches: MergeBranches | null;
  /** Where the merge's time went, measured in the worker (the benchmark reads it). */
  stages: MergeStages;
  /** What the merge left out and why (a companion file of the base that is not what its name says). */
  warnings?: string[];
}

/** Settings of the engine worker (most for tests and benchmarks); each one left out stays as it is. */
export interface WorkerSettings {
  /** The studio's memory budget, one of MEMORY_BUDGETS (the engine card's choice). */
  memoryBudget?: number;
  /**
   * e2e only: a number holds the worker's reads after that many more (the job waits mid-way until
   * the test acts); null opens them again.
   */
  holdReads?: number | null;
  /** false: merges neither read ahead nor write behind (ModelsInput.overlap), for benchmarks. */
  overlap?: boolean;
  /** true: the next shard hash worker is started from a script that is not there, for tests. */
  breakHashWorker?: boolean;
  /** true: the engine kept from the last job is let go now (benchmarks measure idle memory without it). */
  releaseEngine?: boolean;
}

/**
 * A merge's stage times in milliseconds. Reads and writes are summed over calls (parallel reads of
 * the N+1 inputs overlap); upload includes the reads the engine awaits, as in the CLI's benchmark.
 */
export interface MergeStages {
  /** How the shards' sha256 were computed (WebAssembly unless the page's policy forbids it). */
  hash: Sha256Backend;
  /** Where: on the shard hash worker (src/worker/hash-worker.ts), or on the engine worker's thread. */
  hashThread: 'hash worker' | 'engine worker';
  /** Whether the merge ran on the engine an earlier job kept (its buffers and kernels made already). */
  warmEngine?: boolean;
  readMs: number;
  readBytes: number;
  /**
   * What the engine's window cache did in this merge (absent on the CPU reference), and the studio's
   * memory budget it ran with.
   */
  windowCache?: WindowCacheReport & { memoryBudget: number };
  uploadMs: number;
  computeMs: number;
  readbackMs: number;
  writeMs: number;
  writeBytes: number;
}

export interface CompareReport {
  /** Tensors in both with one shape and a float dtype each, in name order. */
  tensors: { name: string; numel: number; differ: number }[];
  /** Tensors only one of the two has, or with another shape. */
  unmatched: string[];
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

/** A model an evaluation runs: a loaded model or a merge, with the label its column is shown under. */
export interface EvalTarget {
  target: ArenaTarget;
  label: string;
  /** Where it came from, as the result's `models[].path` names it. */
  path: string;
}

/** A probe file as picked: its name (the default set name) and its JSONL text. */
export interface ProbeFileText {
  name: string;
  text: string;
}

/**
 * Where an evaluation's probes come from: JSONL files, or the agents' own words: each writer's greedy
 * continuation (`tokens` new tokens) of each prompt becomes a probe of the set named by its label.
 */
export type EvalProbes =
  | { kind: 'files'; files: ProbeFileText[] }
  | { kind: 'references'; prompts: string[]; writers: EvalTarget[]; tokens: number };

/** A candidate merge, scored before it is written: its label (as `--candidate` gives it) and parameters. */
export interface CandidateRecipeSpec {
  label: string;
  params: MethodParams;
}

/**
 * Candidate merges of the loaded base and agents (by slot, in merge order), merged tensor by tensor
 * as the forward pass asks (src/eval/candidate.ts) and scored after the request's models; each
 * tensor is written in its own dtype, as a merge with the output dtype "Same as the inputs" writes it.
 */
export interface EvalCandidates {
  base: string;
  agents: string[];
  recipes: CandidateRecipeSpec[];
}

export interface EvalRequest {
  models: EvalTarget[];
  probes: EvalProbes;
  chat: boolean;
  maxNewTokens: number;
  /** Scored after `models`, under `path` "merge: <label>" as the CLI's --candidate. */
  candidates?: EvalCandidates;
}

export interface GenerateRequest {
  models: EvalTarget[];
  prompt: string;
  chat: boolean;
  maxNewTokens: number;
}

/** Per model (in the request's order): its greedy continuation of the prompt, decoded, and its ids. */
export interface GenerateResult {
  models: EvalModelRef[];
  texts: string[];
  ids: number[][];
}

/** An evaluation's progress: where evaluate() is (EvalProgress), in which pass and on what. */
export interface EvalJobProgress extends EvalProgress {
  /** 'references': writers write their probe sets; 'score': the models are scored and generate. */
  pass: 'references' | 'score';
  /** The model being run. */
  label: string;
  /** The backend the forward pass runs on (its name: the GPU's, or the CPU reference). */
  backend: string;
}

/** What a job's progress messages carry: the driver's for merges and statistics, evaluate()'s for evaluations. */
export type JobProgress = Progress | EvalJobProgress;
export type ProgressOf<K extends WorkerCall> = K extends 'eval' | 'generate' ? EvalJobProgress : Progress;

/** Every call the worker answers: its request fields and its result. */
export interface WorkerCalls {
  open: { request: { slot: string; label: string; files: FileRef[] }; result: ModelSummary };
  close: { request: { slot: string }; result: null };
  /** Exchanges what two slots hold (an agent made the base, the base an agent). */
  swap: { request: { a: string; b: string }; result: null };
  check: { request: { base: string; agents: string[] }; result: CheckReport };
  analyze: { request: AnalyzeRequest; result: AnalysisResult };
  merge: { request: MergeRequest; result: MergeSummary };
  copy: { request: { folder: string; target: FileSystemDirectoryHandle }; result: string[] };
  readBack: { request: { target: FileSystemDirectoryHandle; files: WrittenFile[] }; result: ReadBackReport };
  arena: { request: { target: ArenaTarget; episodes?: number }; result: ArenaScores };
  configure: { request: WorkerSettings; result: null };
  /** The GPU self-test on the engine's device, through its kernels and scheduler (src/worker/self-test.ts). */
  selfTest: { request: Record<string, never>; result: ProbeResult };
  maskCanvas: { request: { canvas: OffscreenCanvas }; result: null };
  maskView: { request: MaskViewCall; result: MaskViewResult };
  explain: { request: ExplainCall; result: ElementExplanation };
  /** Per common float tensor of two merged models: how many elements differ in value. */
  compare: { request: { a: ArenaTarget; b: ArenaTarget }; result: CompareReport };
  /** Every merge folder in OPFS `merges/`, complete or not. */
  library: { request: Record<string, never>; result: LibraryEntry[] };
  /** Removes a merge folder from OPFS `merges/` with everything in it. */
  deleteMerge: { request: { folder: string }; result: null };
  /** Probe scoring of models and merges (src/worker/eval.ts): the JSON `merge-studio eval --json` writes. */
  eval: { request: EvalRequest; result: EvalResult };
  /** Greedy continuations of one prompt by each model, side by side. */
  generate: { request: GenerateRequest; result: GenerateResult };
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
  | { kind: 'progress'; id: number; progress: JobProgress }
  | { kind: 'done'; id: number; result: unknown }
  | { kind: 'error'; id: number; error: WorkerErrorInfo };

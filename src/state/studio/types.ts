// The studio's data and actions as types, and the pure helpers on its data: the parts of the studio
// (studio-slice.ts and the slices in this folder) and the panels read them from here.
import type { AnalysisResult, Progress } from '../../driver/job.ts';
import type { DemoSet, EngineClient } from '../../worker/client.ts';
import type {
  ArenaScores,
  CheckReport,
  CompareReport,
  EvalJobProgress,
  EvalResult,
  FileRef,
  GenerateResult,
  LibraryEntry,
  MergeSummary,
  ProbeFileText,
  ReadBackReport,
  WorkerErrorInfo,
  WorkerSettings,
} from '../../worker/protocol.ts';
import type { ModelSummary } from '../../driver/model-transfer.ts';
import { DEFAULT_MEMORY_BUDGET } from '../../worker/protocol.ts';
import type { FloatDtype } from '../../format/dtype.ts';
import type { ReadDtype } from '../../format/precision.ts';
import { defaultParams } from '../../methods/defaults.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import type { SessionRecipe } from '../session.ts';
import type { RecipeSettings } from '../../methods/recipe.ts';
import type { ModelMapping } from './recipe-import.ts';

export type ModelRole = 'base' | 'agent';
export type TaskStatus = 'idle' | 'running' | 'done' | 'cancelled' | 'error';

export interface StudioModel {
  slot: string;
  role: ModelRole;
  label: string;
  /**
   * Where the model was picked from: its folder's name, within its set's (`set/folder`) where it came
   * in one; the label it was given then may since have been renamed.
   */
  origin?: string;
  status: 'loading' | 'ready' | 'error';
  report: ModelSummary | null;
  error: WorkerErrorInfo | null;
}

export interface TaskState<T> {
  status: TaskStatus;
  progress: Progress | null;
  error: WorkerErrorInfo | null;
  result: T | null;
}

export interface MergeRecord extends MergeSummary {
  id: number;
  /** The merge's name (the Name field, or its default): the card's title, Compare's and the zip's. */
  name: string;
  params: MethodParams;
  baseLabel: string;
  agentLabels: string[];
}

export interface ArenaRow {
  key: string;
  label: string;
  kind: 'base' | 'agent' | 'merge';
  scores: ArenaScores;
}

/** An evaluation job: like TaskState, with evaluate()'s progress. */
export interface EvalTask<T> {
  status: TaskStatus;
  progress: EvalJobProgress | null;
  error: WorkerErrorInfo | null;
  result: T | null;
}

/**
 * A model the Evaluate step can score: a loaded model, a merge of this session, or one in the library
 * (and, in a run's `scored`, a candidate merge).
 */
export interface EvalCandidate {
  /** The slot, the merge's key (mergeKey; `opfs:<folder>` for the library's), or `candidate:<label>`. */
  key: string;
  label: string;
  kind: 'base' | 'agent' | 'merge' | 'candidate';
}

/** A merge scored before it is written: its parameters, named as the CLI's --candidate (candidates.ts). */
export interface CandidateMerge {
  label: string;
  params: MethodParams;
}

/** The Evaluate step: its probes, options, the models it scores, and its runs (eval-slice.ts). */
export interface EvalData {
  /** 'files': probe files (JSONL); 'references': the agents write their own completions of `prompts`. */
  mode: 'files' | 'references';
  probeFiles: ProbeFileText[];
  /** One prompt a line. */
  prompts: string;
  /** New tokens each agent writes per prompt. */
  referenceTokens: number;
  chat: boolean;
  maxNewTokens: number;
  /** Keys of the candidates left out; all others are scored. */
  excluded: string[];
  run: EvalTask<EvalResult>;
  /** The candidates the last run scored, in the result's model order. */
  scored: EvalCandidate[];
  /** Candidate merges of the base and agents, scored after the models, none written. */
  candidateMerges: CandidateMerge[];
  /** The candidate whose "Write this merge" last started the Merge step's merge. */
  writtenCandidate: string | null;
  /** The prompt of the side-by-side generation, and its run. */
  prompt: string;
  generation: EvalTask<GenerateResult>;
}

export interface StudioData {
  source: 'none' | 'demo' | 'files';
  models: StudioModel[];
  check: TaskState<CheckReport>;
  analysis: TaskState<AnalysisResult>;
  /** The agents' labels in the order of the statistics' per-agent arrays. */
  analysisLabels: string[];
  params: MethodParams;
  /** Output dtype; null keeps each tensor's dtype. */
  outDtype: FloatDtype | null;
  /** The next merge's name as typed; null: the default (defaultMergeName). */
  mergeName: string | null;
  /**
   * The read precision D of statistics and merges (the "compare at" control, the CLI's --read-dtype);
   * null: the default (stored for a uniform set, else the base's dtype per tensor).
   */
  readDtype: ReadDtype | null;
  merge: TaskState<MergeSummary>;
  merges: MergeRecord[];
  arena: TaskState<ArenaRow[]>;
  /** Last outcome of "Save to folder…", per merge id. */
  saved: Record<number, string>;
  /** Per merge id written into a picked folder: its files read back and checked against the driver's. */
  readBack: Record<number, TaskState<ReadBackReport>>;
  /** Every merge folder in OPFS, as last listed. */
  library: TaskState<LibraryEntry[]>;
  /** The browser's storage use and quota, and whether it keeps this site's data persistently. */
  storage: StorageInfo | null;
  /** The answer to the last request for persistent storage, made before a large merge. */
  persistAsked: 'granted' | 'denied' | null;
  /** Per OPFS folder: why deleting it failed. */
  deleteErrors: Record<string, string>;
  /** Last outcome of a library merge's "Save to folder…", per OPFS folder. */
  savedFolders: Record<string, string>;
  /** The recipe last applied from a saved session, a link or mergekit YAML, with the models it names. */
  restored: {
    from: 'saved' | 'link' | 'yaml';
    base: string | null;
    agents: string[];
    /** Which recipe model became which loaded agent, where agents were loaded when it was applied. */
    mapping?: ModelMapping[];
    /** What the studio does not do as the recipe says (recipe-import.ts unhonoured), one line each. */
    unhonoured?: string[];
  } | null;
  /**
   * A recipe's gradients and filters (lists per layer, values by tensor name), per agent in merge
   * order and global; the scalars are in `params`. Null: every tensor takes `params`.
   */
  gradients: RecipeSettings | null;
  /** Why the last recipe offered (a link, a YAML file) could not be used. */
  recipeProblem: string | null;
  /** The last comparison of two merges, by merge key (see mergeKey). */
  comparison: TaskState<CompareReport> & { pair: [string, string] | null };
  /** The memory budget of merges (bytes, one of MEMORY_BUDGETS), as the engine card sets it. */
  memoryBudget: number;
  evaluation: EvalData;
}

/** A merge's key in comparisons: its OPFS folder, or the session id of one in a picked folder. */
export function mergeKey(merge: { location: 'opfs' | 'picked'; folder: string; id?: number }): string {
  return merge.location === 'opfs' ? `opfs:${merge.folder}` : `picked:${merge.id ?? 0}`;
}

export interface StorageInfo {
  usage: number;
  quota: number;
  persisted: boolean;
}

/** The browser's storage manager (navigator.storage), injected so tests can fake it. */
export interface StorageServices {
  estimate(): Promise<{ usage?: number; quota?: number }>;
  persisted(): Promise<boolean>;
  persist(): Promise<boolean>;
}

export interface StudioServices {
  engine: EngineClient;
  demo(): Promise<DemoSet>;
  now(): Date;
  /** Absent where the browser has no storage manager. */
  storage?: StorageServices;
}

/** A merge into OPFS whose output is at least this large asks for persistent storage first. */
export const PERSIST_ABOVE_BYTES = 256 * 1024 ** 2;

/**
 * A quota below this is taken for storage held in memory (a private window): Safari and Firefox give
 * private windows small memory-backed quotas, while a profile on disk gets a share of the disk.
 * Chromium reports the same quota in both on purpose, so its incognito windows are not detected.
 */
export const SMALL_QUOTA_BYTES = 2 * 1024 ** 3;

/** Whether the storage looks memory-backed (see SMALL_QUOTA_BYTES); false while unknown. */
export function storageLooksPrivate(storage: StorageInfo | null): boolean {
  return storage !== null && storage.quota > 0 && storage.quota < SMALL_QUOTA_BYTES;
}

/** Loading models, their order and names, and the statistics pass over them (models-slice.ts). */
export interface ModelActions {
  /** Replaces every model with the embedded demo set, then checks and analyses it. */
  loadDemo(): Promise<void>;
  /** Opens files as the base, as a new agent (slot null) or in place of an agent. */
  loadFiles(
    role: ModelRole,
    slot: string | null,
    label: string,
    files: FileRef[],
    origin?: string,
  ): Promise<void>;
  /** Adds each picked model as its own new agent, all read at once. */
  loadAgents(picks: { label: string; files: FileRef[]; origin?: string }[]): Promise<void>;
  removeAgent(slot: string): Promise<void>;
  /** Removes every model, the demo's included: the studio waits for the user's own. */
  startEmpty(): Promise<void>;
  /** Makes an agent the base; the base there was takes the agent's place in the merge order. */
  makeBase(slot: string): Promise<void>;
  /** Renames a model; labels stay unique, so an empty or taken name is refused (returns false). */
  renameModel(slot: string, label: string): boolean;
  /** Moves an agent up (-1) or down (+1) in the merge order. */
  moveAgent(slot: string, delta: -1 | 1): Promise<void>;
  runAnalysis(): Promise<void>;
  cancelAnalysis(): void;
}

/** The recipe: method, parameters, output dtype, and recipes offered from elsewhere (recipe-slice.ts). */
export interface RecipeActions {
  setMethod(method: MethodName): void;
  setParams(changes: Partial<Omit<MethodParams, 'method'>>): void;
  setOutDtype(dtype: FloatDtype | null): void;
  /** Names the next merge; an empty name goes back to the default. */
  setMergeName(name: string): void;
  /** Sets the read precision D (null: the default) and runs the statistics again at it. */
  setReadDtype(dtype: ReadDtype | null): Promise<void>;
  /**
   * Takes the method, parameters and output dtype of a saved session, a link or mergekit YAML; the
   * models it names are shown so that they can be picked again (files cannot be reopened by name).
   */
  applyRecipe(recipe: SessionRecipe, from: 'saved' | 'link' | 'yaml', notes?: string[]): void;
  /** Says why a recipe offered could not be used (null clears it). */
  setRecipeProblem(problem: string | null): void;
  /**
   * Drops a gradient or filter: one agent's (agent t) or the global one (agent null) of a mergekit
   * key, so the scalar in `params` applies to every tensor.
   */
  clearGradient(key: string, agent: number | null): void;
  /** The precision the inputs are read at (null: as stored). */
  setReadDtype(dtype: FloatDtype | null): void;
}

/** The merge job, its read-back and saving, and the arena (merge-slice.ts). */
export interface MergeActions {
  /** Merges into a new subfolder of OPFS `merges/`. */
  runMerge(): Promise<MergeRecord | null>;
  /**
   * Merges straight into a folder the user picks (called from the click, so the picker has its
   * user activation): it must be empty and writable; the merge's files are then read back.
   */
  mergeIntoFolder(pick: () => Promise<FileSystemDirectoryHandle>): Promise<MergeRecord | null>;
  /** Reads the files of a merge in a picked folder back and checks sizes and shard checksums. */
  readBackMerge(id: number): Promise<void>;
  cancelMerge(): void;
  /** Scores the base, every agent and every merge of the session (demo architecture only). */
  runArena(episodes?: number): Promise<void>;
  saveMerge(id: number, target: FileSystemDirectoryHandle): Promise<void>;
}

/** The merges in OPFS and the comparison of two merges (library-slice.ts). */
export interface LibraryActions {
  /** Compares two merges (keys from mergeKey) element by element, per tensor. */
  compareMerges(a: string, b: string): Promise<void>;
  /** Lists every merge folder in OPFS and reads the storage estimate. */
  refreshLibrary(): Promise<void>;
  /** Removes a merge folder from OPFS (and the session's merge record for it). */
  deleteMerge(folder: string): Promise<void>;
  /** Copies a library merge (an OPFS folder) into a folder the user picked. */
  saveFolder(folder: string, target: FileSystemDirectoryHandle): Promise<void>;
}

/** The engine worker's settings and the memory budget (settings-slice.ts). */
export interface SettingsActions {
  /** Test and benchmark aid: the engine worker's settings (a read delay, merges without overlap). */
  configureWorker(settings: WorkerSettings): Promise<void>;
  /**
   * Sets the memory budget of the next jobs (one of MEMORY_BUDGETS) and works out the engine card's
   * memory figures for it again.
   */
  setMemoryBudget(bytes: number): Promise<void>;
}

/** The Evaluate step: probes, options, which models, the run and the side-by-side prompt (eval-slice.ts). */
export interface EvalActions {
  setEvalOptions(
    changes: Partial<
      Pick<EvalData, 'mode' | 'prompts' | 'referenceTokens' | 'chat' | 'maxNewTokens' | 'prompt'>
    >,
  ): void;
  /** Adds probe files; one of the same name is replaced (its name is its set's). */
  addProbeFiles(files: ProbeFileText[]): void;
  removeProbeFile(name: string): void;
  /** Includes or leaves out one candidate (evalCandidates) from the next run. */
  setEvalIncluded(key: string, included: boolean): void;
  /**
   * Adds a candidate merge, named by candidateLabel; returns why not where its parameters are refused
   * or the same merge is there already (null when added).
   */
  addCandidateMerge(params: MethodParams): string | null;
  removeCandidateMerge(label: string): void;
  /**
   * Gives the Merge step the candidate's method and parameters (output dtype: the inputs', as it was
   * scored) and runs that merge into this browser's storage.
   */
  writeCandidateMerge(label: string): Promise<MergeRecord | null>;
  /** Scores the chosen models on the probes (or on the agents' own completions). */
  runEval(): Promise<void>;
  cancelEval(): void;
  /** Greedy continuations of `prompt` by the chosen models, side by side. */
  runGenerate(): Promise<void>;
  cancelGenerate(): void;
}

/** The studio as the store holds it: its plain data under `studio`, and every part's actions. */
export interface StudioSlice
  extends ModelActions, RecipeActions, MergeActions, LibraryActions, SettingsActions, EvalActions {
  studio: StudioData;
}

export const idleTask = <T>(): TaskState<T> => ({
  status: 'idle',
  progress: null,
  error: null,
  result: null,
});

export function initialStudioData(): StudioData {
  return {
    source: 'none',
    models: [],
    check: idleTask(),
    analysis: idleTask(),
    analysisLabels: [],
    params: defaultParams('ramplus', 0),
    outDtype: null,
    mergeName: null,
    readDtype: null,
    merge: idleTask(),
    merges: [],
    arena: idleTask(),
    saved: {},
    readBack: {},
    library: idleTask(),
    storage: null,
    persistAsked: null,
    deleteErrors: {},
    savedFolders: {},
    restored: null,
    gradients: null,
    recipeProblem: null,
    comparison: { ...idleTask<CompareReport>(), pair: null },
    memoryBudget: DEFAULT_MEMORY_BUDGET,
    evaluation: initialEvalData(),
  };
}

export function initialEvalData(): EvalData {
  return {
    mode: 'files',
    probeFiles: [],
    prompts: '',
    referenceTokens: 16,
    chat: false,
    maxNewTokens: 8,
    excluded: [],
    run: idleEvalTask(),
    scored: [],
    candidateMerges: [],
    writtenCandidate: null,
    prompt: '',
    generation: idleEvalTask(),
  };
}

export const idleEvalTask = <T>(): EvalTask<T> => ({
  status: 'idle',
  progress: null,
  error: null,
  result: null,
});

/** The check of the ready base and agents, or null where there is no ready base or agent. */
export function checkRequest(data: StudioData): { base: string; agents: string[] } | null {
  const base = data.models.find((m) => m.role === 'base' && m.status === 'ready');
  const agents = data.models.filter((m) => m.role === 'agent' && m.status === 'ready');
  return base && agents.length > 0 ? { base: base.slot, agents: agents.map((a) => a.slot) } : null;
}

/** The recipe of the studio as it stands: the models' labels and order, method, parameters, dtype. */
export function sessionRecipe(
  data: Pick<StudioData, 'models' | 'params' | 'outDtype' | 'gradients'> & { readDtype?: ReadDtype | null },
): SessionRecipe {
  return {
    base: data.models.find((m) => m.role === 'base')?.label ?? null,
    agents: data.models.filter((m) => m.role === 'agent').map((m) => m.label),
    params: data.params,
    outDtype: data.outDtype,
    ...(data.gradients ? { gradients: data.gradients } : {}),
    readDtype: data.readDtype ?? null,
  };
}

/** The models a merge or the statistics would use, or why they cannot be used yet. */
export function mergeInputs(
  data: StudioData,
): { base: StudioModel; agents: StudioModel[] } | { blocked: string } {
  const base = data.models.find((m) => m.role === 'base');
  const agents = data.models.filter((m) => m.role === 'agent');
  if (!base) return { blocked: 'Load a base model.' };
  if (agents.length === 0) return { blocked: 'Load at least one agent.' };
  const failed = data.models.find((m) => m.status === 'error');
  if (failed)
    return {
      blocked:
        failed.role === 'base'
          ? `The base ${failed.label} could not be opened: choose other files for it, or make an agent the base.`
          : `${failed.label} could not be opened: remove it or choose other files (the statistics leave it out).`,
    };
  if (data.models.some((m) => m.status === 'loading')) return { blocked: 'Models are still being read.' };
  return { base, agents };
}

/**
 * The models the statistics and the merge read: like mergeInputs, but an agent that could not be
 * opened is left out (its card says so) rather than holding back the others. `kept` are the indices
 * of the used agents among all agents (the recipe's per-agent values are indexed by those), `left`
 * the agents left out.
 */
export function statsInputs(
  data: StudioData,
): { base: StudioModel; agents: StudioModel[]; kept: number[]; left: StudioModel[] } | { blocked: string } {
  const opened = { ...data, models: data.models.filter((m) => m.role === 'base' || m.status !== 'error') };
  const inputs = mergeInputs(opened);
  if ('blocked' in inputs) {
    if (opened.models.length < data.models.length && !opened.models.some(isAgent))
      return { blocked: 'No agent could be opened: choose other files for them.' };
    return inputs;
  }
  const all = data.models.filter(isAgent);
  const kept = all.flatMap((m, t) => (m.status === 'error' ? [] : [t]));
  return { ...inputs, kept, left: all.filter((m) => m.status === 'error') };
}

const isAgent = (m: StudioModel): boolean => m.role === 'agent';

// The `studio` slice: the models loaded (with their header-only preflight), the compatibility check,
// the statistics, the recipe, the merge job and its results, and arena scores, all as plain data;
// its actions drive the engine worker through an injected client.
import type { StateCreator } from 'zustand';
import type { AnalysisResult, Progress } from '../driver/job.ts';
import type { DemoSet, EngineClient, EngineJob } from '../worker/client.ts';
import type {
  ArenaScores,
  ArenaTarget,
  CheckReport,
  CompareReport,
  FileRef,
  LibraryEntry,
  MergeSummary,
  ReadBackReport,
  WorkerErrorInfo,
  WorkerSettings,
} from '../worker/protocol.ts';
import type { ModelSummary } from '../driver/model-transfer.ts';
import { at } from '../io/checked.ts';
import { DEFAULT_MEMORY_BUDGET } from '../worker/protocol.ts';
import type { FloatDtype } from '../format/dtype.ts';
import { defaultParams, paramsRecord, validateParams } from '../methods/defaults.ts';
import { specOf, USER_PARAMS } from '../methods/params.ts';
import type { MethodName, MethodParams } from '../methods/types.ts';
import type { SessionRecipe } from './session.ts';

export type ModelRole = 'base' | 'agent';
export type TaskStatus = 'idle' | 'running' | 'done' | 'cancelled' | 'error';

export interface StudioModel {
  slot: string;
  role: ModelRole;
  label: string;
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
  /** The recipe last applied from a saved session, a link or mergekit YAML, with the models it names. */
  restored: { from: 'saved' | 'link' | 'yaml'; base: string | null; agents: string[] } | null;
  /** Why the last recipe offered (a link, a YAML file) could not be used. */
  recipeProblem: string | null;
  /** The last comparison of two merges, by merge key (see mergeKey). */
  comparison: TaskState<CompareReport> & { pair: [string, string] | null };
  /** The memory budget of merges (bytes, one of MEMORY_BUDGETS), as the engine card sets it. */
  memoryBudget: number;
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

export interface StudioSlice {
  studio: StudioData;
  /** Replaces every model with the embedded demo set, then checks and analyses it. */
  loadDemo(): Promise<void>;
  /** Opens files as the base, as a new agent (slot null) or in place of an agent. */
  loadFiles(role: ModelRole, slot: string | null, label: string, files: FileRef[]): Promise<void>;
  /** Adds each picked model as its own new agent, all read at once. */
  loadAgents(picks: { label: string; files: FileRef[] }[]): Promise<void>;
  removeAgent(slot: string): Promise<void>;
  /** Renames a model; labels stay unique, so an empty or taken name is refused (returns false). */
  renameModel(slot: string, label: string): boolean;
  /** Moves an agent up (-1) or down (+1) in the merge order. */
  moveAgent(slot: string, delta: -1 | 1): Promise<void>;
  setMethod(method: MethodName): void;
  setParams(changes: Partial<Omit<MethodParams, 'method'>>): void;
  setOutDtype(dtype: FloatDtype | null): void;
  runAnalysis(): Promise<void>;
  cancelAnalysis(): void;
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
  /**
   * Takes the method, parameters and output dtype of a saved session, a link or mergekit YAML; the
   * models it names are shown so that they can be picked again (files cannot be reopened by name).
   */
  applyRecipe(recipe: SessionRecipe, from: 'saved' | 'link' | 'yaml'): void;
  /** Says why a recipe offered could not be used (null clears it). */
  setRecipeProblem(problem: string | null): void;
  /** Compares two merges (keys from mergeKey) element by element, per tensor. */
  compareMerges(a: string, b: string): Promise<void>;
  /** Lists every merge folder in OPFS and reads the storage estimate. */
  refreshLibrary(): Promise<void>;
  /** Removes a merge folder from OPFS (and the session's merge record for it). */
  deleteMerge(folder: string): Promise<void>;
  /** Test and benchmark aid: the engine worker's settings (a read delay, merges without overlap). */
  configureWorker(settings: WorkerSettings): Promise<void>;
  /**
   * Sets the memory budget of the next jobs (one of MEMORY_BUDGETS) and works out the engine card's
   * memory figures for it again.
   */
  setMemoryBudget(bytes: number): Promise<void>;
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
    merge: idleTask(),
    merges: [],
    arena: idleTask(),
    saved: {},
    readBack: {},
    library: idleTask(),
    storage: null,
    persistAsked: null,
    deleteErrors: {},
    restored: null,
    recipeProblem: null,
    comparison: { ...idleTask<CompareReport>(), pair: null },
    memoryBudget: DEFAULT_MEMORY_BUDGET,
  };
}

/** The check of the ready base and agents, or null where there is no ready base or agent. */
function checkRequest(data: StudioData): { base: string; agents: string[] } | null {
  const base = data.models.find((m) => m.role === 'base' && m.status === 'ready');
  const agents = data.models.filter((m) => m.role === 'agent' && m.status === 'ready');
  return base && agents.length > 0 ? { base: base.slot, agents: agents.map((a) => a.slot) } : null;
}

/** The recipe of the studio as it stands: the models' labels and order, method, parameters, dtype. */
export function sessionRecipe(data: Pick<StudioData, 'models' | 'params' | 'outDtype'>): SessionRecipe {
  return {
    base: data.models.find((m) => m.role === 'base')?.label ?? null,
    agents: data.models.filter((m) => m.role === 'agent').map((m) => m.label),
    params: data.params,
    outDtype: data.outDtype,
  };
}

function asInfo(error: unknown): WorkerErrorInfo {
  const info = (error as { info?: WorkerErrorInfo }).info;
  if (info) return info;
  return error instanceof Error
    ? { name: error.name, message: error.message }
    : { name: 'Error', message: String(error) };
}

const isAbort = (error: WorkerErrorInfo): boolean => error.name === 'AbortError';

type PermissionHandle = FileSystemDirectoryHandle & {
  requestPermission?: (descriptor: { mode: 'read' | 'readwrite' }) => Promise<PermissionState>;
};

/** Asks for readwrite access where the browser has requestPermission; a thrown request counts as denied. */
async function requestWrite(handle: FileSystemDirectoryHandle): Promise<WorkerErrorInfo | null> {
  const request = (handle as PermissionHandle).requestPermission;
  if (!request) return null;
  let state: PermissionState | string;
  try {
    state = await request.call(handle, { mode: 'readwrite' });
  } catch (error) {
    state = error instanceof Error ? error.message : String(error);
  }
  if (state === 'granted') return null;
  return {
    name: 'PermissionDenied',
    message: `Writing to the folder ${handle.name} was not allowed (${state}), so nothing was merged. Choose Merge into a folder… again and allow the browser to edit that folder.`,
  };
}

/** The per-agent parameters (a list each, one value per agent, in merge order). */
const AGENT_PARAMS = USER_PARAMS.filter((key) => specOf(key).scope === 'agent');

/**
 * Params resized to N agents: each per-agent list the method's defaults have keeps what was set and
 * fills with the defaults.
 */
function fitParams(params: MethodParams, agents: number): MethodParams {
  const defaults = paramsRecord(defaultParams(params.method, agents));
  const next = { ...params };
  const record = paramsRecord(next);
  for (const key of AGENT_PARAMS) {
    const fill = defaults[key] as number[] | undefined;
    const values = (record[key] as number[] | undefined) ?? [];
    if (fill) record[key] = fill.map((d, t) => values[t] ?? d);
  }
  return next;
}

/** Params with every per-agent list's entries i and j exchanged, as their agents were. */
function swapAgents(params: MethodParams, i: number, j: number): MethodParams {
  const next = { ...params };
  const record = paramsRecord(next);
  for (const key of AGENT_PARAMS) {
    const values = record[key] as number[] | undefined;
    if (values) record[key] = swapped(values, i, j);
  }
  return next;
}

/** The new method's defaults, with the parameters kept across a change of method (ε, the weights). */
function switchMethod(current: MethodParams, method: MethodName, agents: number): MethodParams {
  const next = defaultParams(method, agents);
  const kept = paramsRecord(fitParams(current, agents));
  const record = paramsRecord(next);
  for (const key of USER_PARAMS)
    if (specOf(key).keepOnMethodChange && kept[key] !== undefined) record[key] = kept[key];
  return next;
}

/** A copy of `items` with the entries at i and j (both inside it) exchanged. */
function swapped<T>(items: readonly T[], i: number, j: number): T[] {
  const next = [...items];
  next[i] = at(items, j, 'swapped entries');
  next[j] = at(items, i, 'swapped entries');
  return next;
}

function stamp(date: Date): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  return (
    `${date.getFullYear()}${two(date.getMonth() + 1)}${two(date.getDate())}-` +
    `${two(date.getHours())}${two(date.getMinutes())}${two(date.getSeconds())}`
  );
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
  if (failed) return { blocked: `${failed.label} could not be opened: remove it or choose other files.` };
  if (data.models.some((m) => m.status === 'loading')) return { blocked: 'Models are still being read.' };
  return { base, agents };
}

export function createStudioSlice(services: StudioServices): StateCreator<StudioSlice, [], [], StudioSlice> {
  return (set, get) => {
    const patch = (changes: Partial<StudioData>): void => set({ studio: { ...get().studio, ...changes } });
    const patchTask = <K extends 'check' | 'analysis' | 'merge' | 'arena' | 'comparison'>(
      key: K,
      changes: Partial<StudioData[K]>,
    ): void => patch({ [key]: { ...get().studio[key], ...changes } } as Partial<StudioData>);
    const patchModel = (slot: string, changes: Partial<StudioModel>): void =>
      patch({ models: get().studio.models.map((m) => (m.slot === slot ? { ...m, ...changes } : m)) });

    // Bumped whenever the set of models changes, so checks and statistics of an older set are dropped.
    let generation = 0;
    // The newest open request per slot: a slot's answer counts only if no newer one was made for it.
    const requests = new Map<string, number>();
    let nextAgent = 1;
    let nextMerge = 1;
    let analysisJob: EngineJob<AnalysisResult> | null = null;
    let mergeJob: EngineJob<MergeSummary> | null = null;
    // Handles of picked output folders, per merge id: kept here, not in the plain-data state.
    const pickedFolders = new Map<number, FileSystemDirectoryHandle>();

    interface MergePlan {
      base: StudioModel;
      agents: StudioModel[];
      params: MethodParams;
      outDtype: FloatDtype | null;
    }

    /** The merge the current recipe asks for, or null with the reason shown as the merge's error. */
    function planMerge(): MergePlan | null {
      const data = get().studio;
      const inputs = mergeInputs(data);
      if ('blocked' in inputs) {
        patchTask('merge', { status: 'error', error: { name: 'NotReady', message: inputs.blocked } });
        return null;
      }
      if (data.check.result && !data.check.result.compat.ok) {
        patchTask('merge', {
          status: 'error',
          error: {
            name: 'CompatibilityError',
            message: 'The models do not match; see the compatibility report.',
          },
        });
        return null;
      }
      const problems = validateParams(data.params, inputs.agents.length);
      if (problems.length > 0) {
        patchTask('merge', {
          status: 'error',
          error: { name: 'InvalidParameters', message: problems.join('; ') },
        });
        return null;
      }
      return { ...inputs, params: data.params, outDtype: data.outDtype };
    }

    async function startMerge(
      plan: MergePlan,
      target?: FileSystemDirectoryHandle,
    ): Promise<MergeRecord | null> {
      if (!target) await askPersistence(plan);
      const storage = target ? undefined : await storageNow();
      const id = nextMerge++;
      const { params } = plan;
      // Another tab of the studio numbers its merges from 1 too: the random part keeps names apart.
      const folder = `${params.method}-${stamp(services.now())}-${id}-${crypto.randomUUID().slice(0, 8)}`;
      const baseLabel = plan.base.label;
      const agentLabels = plan.agents.map((a) => a.label);
      patch({ merge: { status: 'running', progress: null, error: null, result: null } });
      const job = services.engine.call(
        'merge',
        {
          base: plan.base.slot,
          agents: plan.agents.map((a) => a.slot),
          params,
          outDtype: plan.outDtype ?? undefined,
          folder,
          target,
          baseLabel,
          agentLabels,
          storage,
        },
        (progress) => {
          if (mergeJob === job) patchTask('merge', { progress });
        },
      );
      mergeJob = job;
      let record: MergeRecord;
      try {
        const result = await job.promise;
        record = { ...result, id, params, baseLabel, agentLabels };
        if (target) pickedFolders.set(id, target);
        patch({
          merge: { ...get().studio.merge, status: 'done', result },
          merges: [...get().studio.merges, record],
        });
      } catch (error) {
        const info = asInfo(error);
        patchTask('merge', {
          status: isAbort(info) ? 'cancelled' : 'error',
          error: isAbort(info) ? null : info,
        });
        return null;
      } finally {
        mergeJob = null;
      }
      if (target) await get().readBackMerge(id);
      else await get().refreshLibrary();
      return record;
    }

    /** The storage estimate now, for the worker to check a merge into OPFS fits; undefined if unknown. */
    async function storageNow(): Promise<{ usage: number; quota: number } | undefined> {
      try {
        const estimate = await services.storage?.estimate();
        if (typeof estimate?.quota !== 'number') return undefined;
        return { usage: estimate.usage ?? 0, quota: estimate.quota };
      } catch {
        return undefined;
      }
    }

    /** Before a large merge into OPFS: asks the browser to keep the site's storage (once granted, kept). */
    async function askPersistence(plan: MergePlan): Promise<void> {
      const storage = services.storage;
      const bytes = get().studio.check.result?.memory.outputBytes ?? 0;
      if (!storage || bytes < PERSIST_ABOVE_BYTES || plan.agents.length === 0) return;
      try {
        if (await storage.persisted()) return;
        patch({ persistAsked: (await storage.persist()) ? 'granted' : 'denied' });
      } catch {
        patch({ persistAsked: 'denied' });
      }
    }

    async function open(slot: string, label: string, files: FileRef[]): Promise<void> {
      // Per slot: only the newest request for a slot may answer, whatever other slots do meanwhile.
      const mine = (requests.get(slot) ?? 0) + 1;
      requests.set(slot, mine);
      const current = (): boolean => requests.get(slot) === mine;
      const sent = performance.now();
      try {
        const report = await services.engine.call('open', { slot, label, files }).promise;
        // Pick to reply (read, parse, summary, transfer): e2e/inputs.spec.ts reads it for the 300k header.
        performance.measure('merge-studio:open', { start: sent });
        if (current()) patchModel(slot, { status: 'ready', report, error: null });
      } catch (error) {
        if (current()) patchModel(slot, { status: 'error', report: null, error: asInfo(error) });
      }
    }

    /** The label itself when no other model has it, else the label with the first free " (n)". */
    function uniqueLabel(label: string, except?: string): string {
      const taken = new Set(
        get()
          .studio.models.filter((m) => m.slot !== except)
          .map((m) => m.label),
      );
      if (!taken.has(label)) return label;
      let n = 2;
      while (taken.has(`${label} (${n})`)) n++;
      return `${label} (${n})`;
    }

    /** Puts models into the list (replacing those with the same slot), the base first. */
    function placeModels(entries: StudioModel[]): void {
      let next = get().studio.models;
      for (const entry of entries) {
        const exists = next.some((m) => m.slot === entry.slot);
        next = exists ? next.map((m) => (m.slot === entry.slot ? entry : m)) : [...next, entry];
      }
      next = [...next].sort((a, b) => (a.role === b.role ? 0 : a.role === 'base' ? -1 : 1));
      patch({ models: next, source: 'files' });
      patch({ params: fitParams(get().studio.params, agentCount()) });
    }

    /** After any change of models: check compatibility, then run the statistics pass if they match. */
    async function refresh(): Promise<void> {
      const mine = generation;
      analysisJob?.cancel();
      patch({ check: idleTask(), analysis: idleTask() });
      const data = get().studio;
      const request = checkRequest(data);
      if (!request || data.models.some((m) => m.status === 'loading')) return;
      patchTask('check', { status: 'running' });
      const sent = performance.now();
      try {
        const report = await services.engine.call('check', request).promise;
        performance.measure('merge-studio:check', { start: sent });
        if (mine !== generation) return;
        patchTask('check', { status: 'done', result: report });
        if (report.compat.ok && !('blocked' in mergeInputs(get().studio))) await get().runAnalysis();
      } catch (error) {
        if (mine === generation) patchTask('check', { status: 'error', error: asInfo(error) });
      }
    }

    function agentCount(): number {
      return get().studio.models.filter((m) => m.role === 'agent').length;
    }

    return {
      studio: initialStudioData(),

      async loadDemo() {
        generation++;
        const mine = generation;
        const slots = get().studio.models.map((m) => m.slot);
        patch({
          ...initialStudioData(),
          merges: get().studio.merges,
          readBack: get().studio.readBack,
          library: get().studio.library,
          storage: get().studio.storage,
          persistAsked: get().studio.persistAsked,
          deleteErrors: get().studio.deleteErrors,
          restored: get().studio.restored,
          recipeProblem: get().studio.recipeProblem,
          comparison: get().studio.comparison,
          // The recipe stays: a restored or chosen method applies to the demo too.
          params: get().studio.params,
          outDtype: get().studio.outDtype,
          memoryBudget: get().studio.memoryBudget,
          source: 'demo',
        });
        await Promise.all(
          slots.map((slot) => services.engine.call('close', { slot }).promise.catch(() => null)),
        );
        let demo: DemoSet;
        try {
          demo = await services.demo();
        } catch (error) {
          patchTask('check', { status: 'error', error: asInfo(error) });
          return;
        }
        if (mine !== generation) return;
        const entries = [
          { slot: 'base', role: 'base' as const, ref: demo.base },
          ...demo.agents.map((ref) => ({ slot: `agent-${nextAgent++}`, role: 'agent' as const, ref })),
        ];
        patch({
          models: entries.map((e) => ({
            slot: e.slot,
            role: e.role,
            label: e.ref.label,
            status: 'loading',
            report: null,
            error: null,
          })),
          params: fitParams(get().studio.params, demo.agents.length),
        });
        await Promise.all(entries.map((e) => open(e.slot, e.ref.label, e.ref.files)));
        if (mine === generation) await refresh();
      },

      async loadFiles(role, slot, label, files) {
        generation++;
        const target = role === 'base' ? 'base' : (slot ?? `agent-${nextAgent++}`);
        const entry: StudioModel = {
          slot: target,
          role,
          label: uniqueLabel(label, target),
          status: 'loading',
          report: null,
          error: null,
        };
        placeModels([entry]);
        await open(target, entry.label, files);
        await refresh();
      },

      async loadAgents(picks) {
        if (picks.length === 0) return;
        generation++;
        const entries: StudioModel[] = [];
        for (const pick of picks) {
          const entry: StudioModel = {
            slot: `agent-${nextAgent++}`,
            role: 'agent',
            label: uniqueLabel(pick.label),
            status: 'loading',
            report: null,
            error: null,
          };
          // Placed one by one, so that two picks of one name get distinct labels.
          placeModels([entry]);
          entries.push(entry);
        }
        await Promise.all(entries.map((e, i) => open(e.slot, e.label, at(picks, i, 'agent picks').files)));
        await refresh();
      },

      async removeAgent(slot) {
        generation++;
        requests.delete(slot);
        patch({ models: get().studio.models.filter((m) => m.slot !== slot) });
        patch({ params: fitParams(get().studio.params, agentCount()) });
        await services.engine.call('close', { slot }).promise.catch(() => null);
        await refresh();
      },

      renameModel(slot, label) {
        const name = label.trim();
        const models = get().studio.models;
        if (name === '' || models.some((m) => m.slot !== slot && m.label === name)) return false;
        const old = models.find((m) => m.slot === slot);
        if (!old) return false;
        patch({ models: models.map((m) => (m.slot === slot ? { ...m, label: name } : m)) });
        // The statistics' labels follow, so their tables keep naming the same agents.
        patch({ analysisLabels: get().studio.analysisLabels.map((l) => (l === old.label ? name : l)) });
        return true;
      },

      async moveAgent(slot, delta) {
        const models = get().studio.models;
        const base = models.filter((m) => m.role === 'base');
        const agents = models.filter((m) => m.role === 'agent');
        const from = agents.findIndex((m) => m.slot === slot);
        const to = from + delta;
        if (from < 0 || to < 0 || to >= agents.length) return;
        const moved = swapped(agents, from, to);
        generation++;
        // Every per-agent value moves with its agent.
        patch({ models: [...base, ...moved], params: swapAgents(get().studio.params, from, to) });
        // The statistics' per-agent arrays are in the old order: run them again.
        await refresh();
      },

      setMethod(method) {
        // ε and the per-agent weights carry over (keepOnMethodChange); the rest takes the method's defaults.
        patch({ params: switchMethod(get().studio.params, method, agentCount()) });
      },

      setParams(changes) {
        patch({ params: { ...get().studio.params, ...changes } });
      },

      setOutDtype(dtype) {
        patch({ outDtype: dtype });
      },

      async runAnalysis() {
        const inputs = mergeInputs(get().studio);
        if ('blocked' in inputs) {
          patchTask('analysis', { status: 'error', error: { name: 'NotReady', message: inputs.blocked } });
          return;
        }
        const mine = generation;
        analysisJob?.cancel();
        const epsilon = get().studio.params.epsilon;
        patch({
          analysis: { status: 'running', progress: null, error: null, result: null },
          analysisLabels: inputs.agents.map((a) => a.label),
        });
        const job = services.engine.call(
          'analyze',
          { base: inputs.base.slot, agents: inputs.agents.map((a) => a.slot), epsilon },
          (progress) => {
            if (mine === generation && analysisJob === job) patchTask('analysis', { progress });
          },
        );
        analysisJob = job;
        try {
          const result = await job.promise;
          if (mine === generation) patchTask('analysis', { status: 'done', result });
        } catch (error) {
          const info = asInfo(error);
          if (mine === generation && analysisJob === job)
            patchTask('analysis', {
              status: isAbort(info) ? 'cancelled' : 'error',
              error: isAbort(info) ? null : info,
            });
        } finally {
          if (analysisJob === job) analysisJob = null;
        }
      },

      cancelAnalysis() {
        analysisJob?.cancel();
      },

      async runMerge() {
        const plan = planMerge();
        return plan ? startMerge(plan) : null;
      },

      async mergeIntoFolder(pick) {
        const plan = planMerge();
        if (!plan) return null;
        let target: FileSystemDirectoryHandle;
        try {
          target = await pick();
        } catch (error) {
          const info = asInfo(error);
          // Closing the picker is not a failure.
          if (isAbort(info)) return null;
          patchTask('merge', { status: 'error', error: { name: 'PickFailed', message: info.message } });
          return null;
        }
        const denied = await requestWrite(target);
        if (denied) {
          patch({ merge: { status: 'error', progress: null, error: denied, result: null } });
          return null;
        }
        return startMerge(plan, target);
      },

      async readBackMerge(id) {
        const record = get().studio.merges.find((m) => m.id === id);
        const target = pickedFolders.get(id);
        if (!record || !target) return;
        const set = (task: Partial<TaskState<ReadBackReport>>): void =>
          patch({
            readBack: {
              ...get().studio.readBack,
              [id]: { ...idleTask(), ...get().studio.readBack[id], ...task },
            },
          });
        set({ status: 'running', progress: null, error: null, result: null });
        try {
          const result = await services.engine.call('readBack', { target, files: record.files }, (progress) =>
            set({ progress }),
          ).promise;
          set({ status: 'done', result });
        } catch (error) {
          const info = asInfo(error);
          set({ status: isAbort(info) ? 'cancelled' : 'error', error: isAbort(info) ? null : info });
        }
      },

      cancelMerge() {
        mergeJob?.cancel();
      },

      async runArena(episodes) {
        const data = get().studio;
        const targets: { key: string; label: string; kind: ArenaRow['kind']; target: ArenaTarget }[] = [
          ...data.models
            .filter((m) => m.status === 'ready')
            .map((m) => ({ key: m.slot, label: m.label, kind: m.role, target: { slot: m.slot } })),
          ...data.merges.map((m) => {
            const handle = pickedFolders.get(m.id);
            return {
              key: `merge-${m.id}`,
              label: `merge ${m.id} (${m.params.method})`,
              kind: 'merge' as const,
              target: handle ? { handle } : { folder: m.folder },
            };
          }),
        ];
        patch({ arena: { status: 'running', progress: null, error: null, result: [] } });
        const rows: ArenaRow[] = [];
        try {
          for (const t of targets) {
            const scores = await services.engine.call('arena', { target: t.target, episodes }).promise;
            rows.push({ key: t.key, label: t.label, kind: t.kind, scores });
            patchTask('arena', { result: [...rows] });
          }
          patchTask('arena', { status: 'done' });
        } catch (error) {
          patchTask('arena', { status: 'error', error: asInfo(error) });
        }
      },

      async saveMerge(id, target) {
        const record = get().studio.merges.find((m) => m.id === id);
        // A merge in a picked folder is already where the user wanted it.
        if (!record || record.location !== 'opfs') return;
        try {
          const names = await services.engine.call('copy', { folder: record.folder, target }).promise;
          patch({ saved: { ...get().studio.saved, [id]: `Saved ${names.length} files to ${target.name}.` } });
        } catch (error) {
          patch({ saved: { ...get().studio.saved, [id]: `Saving failed: ${asInfo(error).message}` } });
        }
      },

      applyRecipe(recipe, from) {
        const agents = agentCount();
        patch({
          params: agents > 0 ? fitParams(recipe.params, agents) : recipe.params,
          outDtype: recipe.outDtype,
          restored: { from, base: recipe.base, agents: recipe.agents },
          recipeProblem: null,
        });
      },

      setRecipeProblem(problem) {
        patch({ recipeProblem: problem });
      },

      async compareMerges(a, b) {
        const target = (key: string): ArenaTarget | null => {
          if (key.startsWith('opfs:')) return { folder: key.slice('opfs:'.length) };
          const handle = pickedFolders.get(Number(key.slice('picked:'.length)));
          return handle ? { handle } : null;
        };
        const [ta, tb] = [target(a), target(b)];
        const pair: [string, string] = [a, b];
        if (!ta || !tb) {
          patch({
            comparison: {
              ...idleTask<CompareReport>(),
              status: 'error',
              error: { name: 'NotFound', message: 'One of the two merges is no longer available.' },
              pair,
            },
          });
          return;
        }
        patch({ comparison: { ...idleTask<CompareReport>(), status: 'running', pair } });
        try {
          const result = await services.engine.call('compare', { a: ta, b: tb }).promise;
          if (get().studio.comparison.pair === pair) patchTask('comparison', { status: 'done', result });
        } catch (error) {
          if (get().studio.comparison.pair === pair)
            patchTask('comparison', { status: 'error', error: asInfo(error) });
        }
      },

      async refreshLibrary() {
        const previous = get().studio.library.result;
        patch({ library: { status: 'running', progress: null, error: null, result: previous } });
        const storage = services.storage;
        const [listed, estimate, persisted] = await Promise.allSettled([
          services.engine.call('library', {}).promise,
          storage?.estimate() ?? Promise.reject(new Error('no storage manager')),
          storage?.persisted() ?? Promise.resolve(false),
        ]);
        if (listed.status === 'fulfilled')
          patch({ library: { status: 'done', progress: null, error: null, result: listed.value } });
        else
          patch({
            library: { status: 'error', progress: null, error: asInfo(listed.reason), result: previous },
          });
        if (estimate.status === 'fulfilled')
          patch({
            storage: {
              usage: estimate.value.usage ?? 0,
              quota: estimate.value.quota ?? 0,
              persisted: persisted.status === 'fulfilled' && persisted.value,
            },
          });
      },

      async deleteMerge(folder) {
        const { [folder]: _dropped, ...others } = get().studio.deleteErrors;
        patch({ deleteErrors: others });
        try {
          await services.engine.call('deleteMerge', { folder }).promise;
        } catch (error) {
          patch({ deleteErrors: { ...get().studio.deleteErrors, [folder]: asInfo(error).message } });
          return;
        }
        // The session's record of it goes too: its files are gone.
        const gone = get().studio.merges.filter((m) => m.location === 'opfs' && m.folder === folder);
        patch({
          merges: get().studio.merges.filter((m) => !gone.includes(m)),
          library: {
            ...get().studio.library,
            result: (get().studio.library.result ?? []).filter((e) => e.folder !== folder),
          },
        });
        await get().refreshLibrary();
      },

      async configureWorker(settings) {
        await services.engine.call('configure', settings).promise;
      },

      async setMemoryBudget(bytes) {
        patch({ memoryBudget: bytes });
        await services.engine.call('configure', { memoryBudget: bytes }).promise;
        // Only the memory estimate depends on the budget: the check is asked again, the statistics kept.
        const request = checkRequest(get().studio);
        if (get().studio.check.status !== 'done' || !request) return;
        const mine = generation;
        const report = await services.engine.call('check', request).promise;
        if (mine === generation && get().studio.check.status === 'done')
          patchTask('check', { result: report });
      },
    };
  };
}

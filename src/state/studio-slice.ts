// The `studio` slice: the models loaded (with their header-only preflight), the compatibility check,
// the statistics, the recipe, the merge job and its results, and arena scores, all as plain data;
// its actions drive the engine worker through an injected client.
import type { StateCreator } from 'zustand';
import type { AnalysisResult, Progress } from '../engine/driver.ts';
import type { DemoSet, EngineClient, EngineJob } from '../engine/worker-client.ts';
import type {
  ArenaScores,
  ArenaTarget,
  CheckReport,
  FileRef,
  MergeSummary,
  WorkerErrorInfo,
} from '../engine/worker.ts';
import type { FloatDtype } from '../format/dtype.ts';
import type { InspectReport } from '../format/inspect.ts';
import { defaultParams, validateParams } from '../methods/defaults.ts';
import type { MethodName, MethodParams } from '../methods/types.ts';

export type ModelRole = 'base' | 'agent';
export type TaskStatus = 'idle' | 'running' | 'done' | 'cancelled' | 'error';

export interface StudioModel {
  slot: string;
  role: ModelRole;
  label: string;
  status: 'loading' | 'ready' | 'error';
  report: InspectReport | null;
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
}

export interface StudioServices {
  engine: EngineClient;
  demo(): Promise<DemoSet>;
  now(): Date;
}

export interface StudioSlice {
  studio: StudioData;
  /** Replaces every model with the embedded demo set, then checks and analyses it. */
  loadDemo(): Promise<void>;
  /** Opens files as the base, as a new agent (slot null) or in place of an agent. */
  loadFiles(role: ModelRole, slot: string | null, label: string, files: FileRef[]): Promise<void>;
  removeAgent(slot: string): Promise<void>;
  setMethod(method: MethodName): void;
  setParams(changes: Partial<Omit<MethodParams, 'method'>>): void;
  setOutDtype(dtype: FloatDtype | null): void;
  runAnalysis(): Promise<void>;
  cancelAnalysis(): void;
  runMerge(): Promise<MergeRecord | null>;
  cancelMerge(): void;
  /** Scores the base, every agent and every merge of the session (demo architecture only). */
  runArena(episodes?: number): Promise<void>;
  saveMerge(id: number, target: FileSystemDirectoryHandle): Promise<void>;
  /** Test aid: makes every read of the worker wait, so a job runs long enough to cancel. */
  setReadDelay(ms: number): Promise<void>;
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

/** Params resized to N agents: per-agent lists keep what was set and fill with the defaults. */
function fitParams(params: MethodParams, agents: number): MethodParams {
  const defaults = defaultParams(params.method, agents);
  const fit = (values: number[], fill: number[]): number[] => fill.map((d, t) => values[t] ?? d);
  return {
    ...params,
    weights: fit(params.weights, defaults.weights),
    density: fit(params.density, defaults.density),
  };
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
    const patchTask = <K extends 'check' | 'analysis' | 'merge' | 'arena'>(
      key: K,
      changes: Partial<StudioData[K]>,
    ): void => patch({ [key]: { ...get().studio[key], ...changes } } as Partial<StudioData>);
    const patchModel = (slot: string, changes: Partial<StudioModel>): void =>
      patch({ models: get().studio.models.map((m) => (m.slot === slot ? { ...m, ...changes } : m)) });

    // Bumped whenever the set of models changes, so answers about an older set are dropped.
    let generation = 0;
    let nextAgent = 1;
    let nextMerge = 1;
    let analysisJob: EngineJob<AnalysisResult> | null = null;
    let mergeJob: EngineJob<MergeSummary> | null = null;

    async function open(slot: string, label: string, files: FileRef[]): Promise<void> {
      const mine = generation;
      try {
        const report = await services.engine.call('open', { slot, label, files }).promise;
        if (mine === generation) patchModel(slot, { status: 'ready', report, error: null });
      } catch (error) {
        if (mine === generation) patchModel(slot, { status: 'error', report: null, error: asInfo(error) });
      }
    }

    /** After any change of models: check compatibility, then run the statistics pass if they match. */
    async function refresh(): Promise<void> {
      const mine = generation;
      analysisJob?.cancel();
      patch({ check: idleTask(), analysis: idleTask() });
      const data = get().studio;
      const base = data.models.find((m) => m.role === 'base' && m.status === 'ready');
      const agents = data.models.filter((m) => m.role === 'agent' && m.status === 'ready');
      if (!base || agents.length === 0 || data.models.some((m) => m.status === 'loading')) return;
      patchTask('check', { status: 'running' });
      try {
        const report = await services.engine.call('check', {
          base: base.slot,
          agents: agents.map((a) => a.slot),
        }).promise;
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
        patch({ ...initialStudioData(), merges: get().studio.merges, source: 'demo' });
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
        const models = get().studio.models;
        const entry: StudioModel = {
          slot: target,
          role,
          label,
          status: 'loading',
          report: null,
          error: null,
        };
        const exists = models.some((m) => m.slot === target);
        const next = exists ? models.map((m) => (m.slot === target ? entry : m)) : [...models, entry];
        // The base always comes first.
        next.sort((a, b) => (a.role === b.role ? 0 : a.role === 'base' ? -1 : 1));
        patch({ models: next, source: 'files' });
        patch({ params: fitParams(get().studio.params, agentCount()) });
        await open(target, label, files);
        await refresh();
      },

      async removeAgent(slot) {
        generation++;
        patch({ models: get().studio.models.filter((m) => m.slot !== slot) });
        patch({ params: fitParams(get().studio.params, agentCount()) });
        await services.engine.call('close', { slot }).promise.catch(() => null);
        await refresh();
      },

      setMethod(method) {
        const current = get().studio.params;
        const next = defaultParams(method, agentCount());
        // ε and the per-agent weights carry over; the rest takes the method's defaults.
        patch({
          params: { ...next, epsilon: current.epsilon, weights: fitParams(current, agentCount()).weights },
        });
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
        const id = nextMerge++;
        const params = data.params;
        const folder = `${params.method}-${stamp(services.now())}-${id}`;
        const baseLabel = inputs.base.label;
        const agentLabels = inputs.agents.map((a) => a.label);
        patch({ merge: { status: 'running', progress: null, error: null, result: null } });
        const job = services.engine.call(
          'merge',
          {
            base: inputs.base.slot,
            agents: inputs.agents.map((a) => a.slot),
            params,
            outDtype: data.outDtype ?? undefined,
            folder,
            baseLabel,
            agentLabels,
          },
          (progress) => {
            if (mergeJob === job) patchTask('merge', { progress });
          },
        );
        mergeJob = job;
        try {
          const result = await job.promise;
          const record: MergeRecord = { ...result, id, params, baseLabel, agentLabels };
          patch({
            merge: { ...get().studio.merge, status: 'done', result },
            merges: [...get().studio.merges, record],
          });
          return record;
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
          ...data.merges.map((m) => ({
            key: `merge-${m.id}`,
            label: `merge ${m.id} (${m.params.method})`,
            kind: 'merge' as const,
            target: { folder: m.folder },
          })),
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
        if (!record) return;
        try {
          const names = await services.engine.call('copy', { folder: record.folder, target }).promise;
          patch({ saved: { ...get().studio.saved, [id]: `Saved ${names.length} files to ${target.name}.` } });
        } catch (error) {
          patch({ saved: { ...get().studio.saved, [id]: `Saving failed: ${asInfo(error).message}` } });
        }
      },

      async setReadDelay(ms) {
        await services.engine.call('configure', { readDelayMs: ms }).promise;
      },
    };
  };
}

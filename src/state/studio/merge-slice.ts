// The merge part of the studio: the merge job (into OPFS, or straight into a picked folder, then read
// back), saving a merge to a folder, and the arena's scores of every model and merge.
import type { StateCreator } from 'zustand';
import type { ArenaTarget, MergeSummary, ReadBackReport, WorkerErrorInfo } from '../../worker/protocol.ts';
import type { EngineJob } from '../../worker/client.ts';
import type { FloatDtype } from '../../format/dtype.ts';
import type { ReadDtype } from '../../format/precision.ts';
import { defaultParams, validateParams } from '../../methods/defaults.ts';
import type { MethodParams } from '../../methods/types.ts';
import type { RecipeSettings } from '../../methods/recipe.ts';
import { mergeSettings, reorderRecipe } from './recipe-import.ts';
import { asInfo, isAbort, type StudioContext } from './context.ts';
import { cleanName, defaultMergeName, folderPart } from './names.ts';
import {
  idleTask,
  statsInputs,
  PERSIST_ABOVE_BYTES,
  type ArenaRow,
  type MergeActions,
  type MergeRecord,
  type StudioModel,
  type StudioSlice,
  type TaskState,
} from './types.ts';

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

export function createMergeSlice(ctx: StudioContext): StateCreator<StudioSlice, [], [], MergeActions> {
  return (_set, get) => {
    const { services, patch, patchTask, pickedFolders } = ctx;
    let nextMerge = 1;
    let mergeJob: EngineJob<MergeSummary> | null = null;

    interface MergePlan {
      base: StudioModel;
      agents: StudioModel[];
      params: MethodParams;
      outDtype: FloatDtype | null;
      settings: RecipeSettings | undefined;
      readDtype: ReadDtype | null;
    }

    /** The merge the current recipe asks for, or null with the reason shown as the merge's error. */
    function planMerge(): MergePlan | null {
      const data = get().studio;
      const inputs = statsInputs(data);
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
      // An agent that could not be opened is left out: its per-agent values go with it.
      const all = data.models.filter((m) => m.role === 'agent').length;
      const { params, gradients } =
        inputs.kept.length === all
          ? { params: data.params, gradients: data.gradients }
          : reorderRecipe(
              data.params,
              data.gradients ?? { global: {}, models: [] },
              inputs.kept,
              defaultParams(data.params.method, inputs.kept.length),
            );
      const problems = validateParams(params, inputs.agents.length);
      if (problems.length > 0) {
        patchTask('merge', {
          status: 'error',
          error: { name: 'InvalidParameters', message: problems.join('; ') },
        });
        return null;
      }
      return {
        base: inputs.base,
        agents: inputs.agents,
        params,
        outDtype: data.outDtype,
        settings: mergeSettings(params, gradients, inputs.agents.length),
        readDtype: data.readDtype,
      };
    }

    async function startMerge(
      plan: MergePlan,
      target?: FileSystemDirectoryHandle,
    ): Promise<MergeRecord | null> {
      if (!target) await askPersistence(plan);
      const storage = target ? undefined : await storageNow();
      const id = nextMerge++;
      const { params } = plan;
      const now = services.now();
      const name =
        cleanName(get().studio.mergeName ?? '') || defaultMergeName(params.method, plan.agents.length, now);
      // The name's default carries the date; another tab of the studio numbers its merges from 1 too,
      // and two merges may share a name: the random part keeps folders apart.
      const folder = `${folderPart(name)}-${id}-${crypto.randomUUID().slice(0, 8)}`;
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
          ...(plan.readDtype ? { readDtype: plan.readDtype } : {}),
          folder,
          target,
          baseLabel,
          agentLabels,
          name,
          storage,
          ...(plan.settings ? { settings: plan.settings } : {}),
        },
        (progress) => {
          if (mergeJob === job) patchTask('merge', { progress });
        },
      );
      mergeJob = job;
      let record: MergeRecord;
      try {
        const result = await job.promise;
        record = { ...result, id, name, params, baseLabel, agentLabels };
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

    return {
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
    };
  };
}

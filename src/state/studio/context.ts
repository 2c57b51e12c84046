// What the parts of the studio share: the store's writers for its plain data, the services, the
// set's generation and the picked folders' handles (kept here, not in the plain-data state).
import type { StoreApi } from 'zustand';
import type { WorkerErrorInfo } from '../../worker/protocol.ts';
import type { StudioData, StudioModel, StudioServices, StudioSlice } from './types.ts';

export type TaskKey = 'check' | 'analysis' | 'merge' | 'arena' | 'comparison';

export interface StudioContext {
  services: StudioServices;
  patch(changes: Partial<StudioData>): void;
  patchTask<K extends TaskKey>(key: K, changes: Partial<StudioData[K]>): void;
  patchModel(slot: string, changes: Partial<StudioModel>): void;
  /** Bumped whenever the set of models changes, so checks and statistics of an older set are dropped. */
  generation: number;
  /** Handles of picked output folders, per merge id. */
  pickedFolders: Map<number, FileSystemDirectoryHandle>;
  agentCount(): number;
}

export function createStudioContext(
  services: StudioServices,
  set: StoreApi<StudioSlice>['setState'],
  get: () => StudioSlice,
): StudioContext {
  const patch = (changes: Partial<StudioData>): void => set({ studio: { ...get().studio, ...changes } });
  return {
    services,
    patch,
    patchTask: (key, changes) =>
      patch({ [key]: { ...get().studio[key], ...changes } } as Partial<StudioData>),
    patchModel: (slot, changes) =>
      patch({ models: get().studio.models.map((m) => (m.slot === slot ? { ...m, ...changes } : m)) }),
    generation: 0,
    pickedFolders: new Map(),
    agentCount: () => get().studio.models.filter((m) => m.role === 'agent').length,
  };
}

export function asInfo(error: unknown): WorkerErrorInfo {
  const info = (error as { info?: WorkerErrorInfo }).info;
  if (info) return info;
  return error instanceof Error
    ? { name: error.name, message: error.message }
    : { name: 'Error', message: String(error) };
}

export const isAbort = (error: WorkerErrorInfo): boolean => error.name === 'AbortError';

// The typed hooks that end-to-end tests use to read the store, installed on `window` only in
// development and e2e builds (see main.tsx).
import type { StoreApi } from 'zustand/vanilla';
import type { AnalysisResult } from '../driver/job.ts';
import { mergedFile } from '../worker/client.ts';
import type { GpuState, WorkerProbeState } from './gpu-slice.ts';
import type { InspectData } from './inspect-slice.ts';
import type { StudioState } from './store.ts';
import type { StudioData, TaskState } from './studio-slice.ts';

export interface MergeStudioTestApi {
  /** The gpu slice's data as it is now. */
  gpu(): GpuState;
  /** Resolves with the gpu slice once detection has finished (status is no longer 'probing'). */
  gpuSettled(): Promise<GpuState>;
  /** Runs the self-test in a Web Worker through the store's action and returns the worker state. */
  runWorkerProbe(): Promise<WorkerProbeState>;
  /** The studio slice's data as it is now. */
  studio(): StudioData;
  /** Resolves once the statistics pass has finished, failed or been cancelled. */
  analysisSettled(): Promise<TaskState<AnalysisResult>>;
  /** The tensor view and inspector's data as it is now (block counts of the view included). */
  inspect(): InspectData;
  /** Lets `after` more reads of the engine worker pass, then holds the rest until openReads(). */
  holdReads(after: number): Promise<void>;
  /** Opens the read gate: held reads go on. */
  openReads(): Promise<void>;
  /** false: merges neither read ahead nor write behind, for the studio benchmark to compare. */
  setOverlap(on: boolean): Promise<void>;
  /** Makes the next shard hash worker fail to start (its script missing). */
  breakHashWorker(): Promise<void>;
  /** Lets the engine the worker keeps between jobs go, with its buffers. */
  releaseEngine(): Promise<void>;
  /** A merged file in OPFS, base64-encoded, for byte-for-byte checks. */
  mergedFileBase64(folder: string, name: string): Promise<string>;
}

declare global {
  interface Window {
    __mergeStudio?: MergeStudioTestApi;
  }
}

export function createTestApi(store: StoreApi<StudioState>): MergeStudioTestApi {
  return {
    gpu: () => store.getState().gpu,
    gpuSettled: () =>
      new Promise((resolve) => {
        const check = (state: StudioState): boolean => {
          if (state.gpu.status === 'probing') return false;
          resolve(state.gpu);
          return true;
        };
        if (check(store.getState())) return;
        const unsubscribe = store.subscribe((state) => {
          if (check(state)) unsubscribe();
        });
      }),
    runWorkerProbe: async () => {
      await store.getState().runWorkerProbe();
      return store.getState().gpu.worker;
    },
    studio: () => store.getState().studio,
    analysisSettled: () =>
      new Promise((resolve) => {
        const check = (state: StudioState): boolean => {
          const { analysis } = state.studio;
          if (analysis.status === 'idle' || analysis.status === 'running') return false;
          resolve(analysis);
          return true;
        };
        if (check(store.getState())) return;
        const unsubscribe = store.subscribe((state) => {
          if (check(state)) unsubscribe();
        });
      }),
    inspect: () => store.getState().inspect,
    holdReads: (after) => store.getState().configureWorker({ holdReads: after }),
    openReads: () => store.getState().configureWorker({ holdReads: null }),
    setOverlap: (on) => store.getState().configureWorker({ overlap: on }),
    breakHashWorker: () => store.getState().configureWorker({ breakHashWorker: true }),
    releaseEngine: () => store.getState().configureWorker({ releaseEngine: true }),
    mergedFileBase64: async (folder, name) => {
      const bytes = new Uint8Array(await (await mergedFile(folder, name)).arrayBuffer());
      let text = '';
      // In slices: String.fromCharCode takes its bytes as arguments.
      for (let at = 0; at < bytes.length; at += 0x8000)
        text += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
      return btoa(text);
    },
  };
}

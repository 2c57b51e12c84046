// The studio's one zustand store, composed of typed slices holding plain data; the app's instance
// is wired to the browser and the engine, tests build their own with fakes.
import { useStore } from 'zustand';
import { createStore, type StoreApi } from 'zustand/vanilla';
import { inspectGpu } from '../worker/probe.ts';
import { createEngineClient, fetchDemoSet } from '../worker/client.ts';
import { createGpuSlice, type GpuServices, type GpuSlice } from './gpu-slice.ts';
import { createInspectSlice, type InspectSlice } from './inspect-slice.ts';
import {
  createStudioSlice,
  type StudioServices as EngineServices,
  type StudioSlice,
} from './studio-slice.ts';

export type StudioState = GpuSlice & StudioSlice & InspectSlice;

export interface StudioServices {
  gpu: GpuServices;
  /** The engine worker and the demo set; tests of other slices may leave it to the browser's. */
  studio?: EngineServices;
}

const storageManager = globalThis.navigator?.storage as StorageManager | undefined;

const engine = createEngineClient();
/** The self-test runs in the engine worker, on the device and through the kernels that merge. */
const selfTest = () => engine.call('selfTest', {}).promise;

const browserStudio: EngineServices = {
  engine,
  demo: () => fetchDemoSet(),
  now: () => new Date(),
  storage: storageManager?.estimate
    ? {
        estimate: () => storageManager.estimate(),
        persisted: () => storageManager.persisted(),
        persist: () => storageManager.persist(),
      }
    : undefined,
};

export const browserServices: StudioServices = {
  gpu: {
    environment: () => ({
      // Typed as always present, but missing in browsers without WebGPU and on insecure pages.
      gpu: (globalThis.navigator as { gpu?: GPU } | undefined)?.gpu,
      secureContext: globalThis.isSecureContext ?? false,
    }),
    inspect: inspectGpu,
    probe: selfTest,
    probeInWorker: selfTest,
  },
  studio: browserStudio,
};

export function createStudioStore(services: StudioServices = browserServices): StoreApi<StudioState> {
  return createStore<StudioState>()((...args) => ({
    ...createGpuSlice(services.gpu)(...args),
    ...createStudioSlice(services.studio ?? browserStudio)(...args),
    ...createInspectSlice(services.studio ?? browserStudio)(...args),
  }));
}

export const studioStore = createStudioStore();

/** React binding: components read the store through selectors and never write it directly. */
export function useStudio<T>(selector: (state: StudioState) => T): T {
  return useStore(studioStore, selector);
}

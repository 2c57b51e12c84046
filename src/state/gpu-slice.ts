// The `gpu` slice: what WebGPU this browser offers and whether the self-test passed, as plain data,
// plus the actions that find out by calling the engine.
import type { StateCreator } from 'zustand';
import type { GpuKeyLimits, GpuReport, ProbeResult } from '../worker/probe.ts';

export type GpuStatus = 'probing' | 'ready' | 'unavailable' | 'error';

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
}

export interface WorkerProbeState {
  status: 'idle' | 'running' | 'done' | 'error';
  result: ProbeResult | null;
  message: string | null;
}

export interface GpuState {
  status: GpuStatus;
  adapter: AdapterSummary | null;
  limits: GpuKeyLimits | null;
  features: string[];
  shaderF16: boolean;
  /** Why the status is not 'ready', and what to do about it; null when ready or still probing. */
  message: string | null;
  probe: ProbeResult | null;
  worker: WorkerProbeState;
}

/** Where the slice's actions reach the platform and the engine; tests pass fakes. */
export interface GpuServices {
  environment(): { gpu: GPU | undefined; secureContext: boolean };
  inspect(gpu: GPU): Promise<GpuReport | null>;
  /** The self-test at start, once the page has an adapter (the browser runs it in the engine worker). */
  probe(gpu: GPU): Promise<ProbeResult>;
  /** The self-test on demand, in the engine worker. */
  probeInWorker(): Promise<ProbeResult>;
}

export interface GpuSlice {
  gpu: GpuState;
  /** Finds the adapter and runs the self-test; concurrent calls share one run. */
  detectGpu(): Promise<void>;
  /** Runs the self-test again in the engine worker; concurrent calls share one run. */
  runWorkerProbe(): Promise<void>;
}

export const initialGpuState: GpuState = {
  status: 'probing',
  adapter: null,
  limits: null,
  features: [],
  shaderF16: false,
  message: null,
  probe: null,
  worker: { status: 'idle', result: null, message: null },
};

export const GPU_MESSAGES = {
  insecure:
    'WebGPU is only offered to secure pages. Open Merge Studio over https://, or locally from ' +
    'http://localhost or http://127.0.0.1 (for example with `npm start`).',
  missing:
    'This browser does not offer WebGPU (navigator.gpu is missing). Use a recent Chrome, Edge or ' +
    'other Chromium-based browser (version 113 or later). If WebGPU is switched off there, turn on ' +
    'chrome://flags/#enable-unsafe-webgpu and restart the browser.',
  noAdapter:
    'WebGPU is present but the browser granted no GPU adapter. Turn on hardware acceleration in the ' +
    "browser's settings, look at chrome://gpu for a blocked GPU or driver, update the graphics " +
    'driver, or start Chromium with --enable-unsafe-webgpu.',
} as const;

export function createGpuSlice(services: GpuServices): StateCreator<GpuSlice, [], [], GpuSlice> {
  return (set, get) => {
    // In-flight runs, so a second call (React StrictMode, a double click) joins the first.
    let detecting: Promise<void> | null = null;
    let probingInWorker: Promise<void> | null = null;
    const patch = (changes: Partial<GpuState>): void => set({ gpu: { ...get().gpu, ...changes } });
    const patchWorker = (changes: Partial<WorkerProbeState>): void =>
      patch({ worker: { ...get().gpu.worker, ...changes } });

    async function detect(): Promise<void> {
      patch({ ...initialGpuState, worker: get().gpu.worker });
      const { gpu, secureContext } = services.environment();
      if (!gpu) {
        patch({
          status: 'unavailable',
          message: secureContext ? GPU_MESSAGES.missing : GPU_MESSAGES.insecure,
        });
        return;
      }
      let report: GpuReport | null;
      try {
        report = await services.inspect(gpu);
      } catch (error) {
        patch({
          status: 'error',
          message: `Asking the browser for a WebGPU adapter failed: ${errorText(error)}`,
        });
        return;
      }
      if (!report) {
        patch({ status: 'unavailable', message: GPU_MESSAGES.noAdapter });
        return;
      }
      const { limits, features, shaderF16, ...adapter } = report;
      patch({ adapter, limits, features, shaderF16 });
      try {
        const probe = await services.probe(gpu);
        patch({
          probe,
          status: probe.ok ? 'ready' : 'error',
          message: probe.ok ? null : mismatchMessage(probe),
        });
      } catch (error) {
        patch({ status: 'error', message: `The GPU self-test could not run: ${errorText(error)}` });
      }
    }

    async function probeInWorker(): Promise<void> {
      patchWorker({ status: 'running', result: null, message: null });
      try {
        const result = await services.probeInWorker();
        patchWorker({
          status: result.ok ? 'done' : 'error',
          result,
          message: result.ok ? null : mismatchMessage(result),
        });
      } catch (error) {
        patchWorker({
          status: 'error',
          message: `The self-test in a Web Worker failed: ${errorText(error)}`,
        });
      }
    }

    return {
      gpu: initialGpuState,
      detectGpu() {
        detecting ??= detect().finally(() => {
          detecting = null;
        });
        return detecting;
      },
      runWorkerProbe() {
        probingInWorker ??= probeInWorker().finally(() => {
          probingInWorker = null;
        });
        return probingInWorker;
      },
    };
  };
}

function mismatchMessage(probe: ProbeResult): string {
  const first = probe.firstMismatch;
  const where = first
    ? ` (first at element ${first.index}: got 0x${hex(first.actual)}, expected 0x${hex(first.expected)})`
    : '';
  return (
    `The GPU self-test computed ${probe.mismatches} of ${probe.elements} values wrong${where}. ` +
    'Merges on this GPU cannot be trusted: update the graphics driver or try another browser.'
  );
}

function hex(bits: number): string {
  return bits.toString(16).padStart(4, '0');
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// The store's gpu slice against fake platform and engine services: every status and message path.
import { describe, expect, it, vi } from 'vitest';
import type { GpuReport, ProbeResult } from '../worker/probe.ts';
import { GPU_MESSAGES, type GpuServices } from './gpu-slice.ts';
import { createStudioStore } from './store.ts';
import { createTestApi } from './test-api.ts';

const fakeGpu = {} as GPU;

const report: GpuReport = {
  vendor: 'google',
  architecture: 'swiftshader',
  device: '',
  description: 'SwiftShader Device',
  isFallbackAdapter: true,
  limits: {
    maxStorageBufferBindingSize: 2 ** 30,
    maxBufferSize: 2 ** 30,
    maxComputeWorkgroupsPerDimension: 65535,
    maxComputeInvocationsPerWorkgroup: 256,
    maxComputeWorkgroupStorageSize: 16384,
    maxStorageBuffersPerShaderStage: 8,
  },
  features: ['subgroups', 'timestamp-query'],
  shaderF16: false,
};

const passed: ProbeResult = { ok: true, elements: 4099, mismatches: 0, ms: 3.5, firstMismatch: null };
const failed: ProbeResult = {
  ok: false,
  elements: 4099,
  mismatches: 12,
  ms: 3.5,
  firstMismatch: { index: 7, expected: 0x3fc2, actual: 0x3fc1 },
};

function storeWith(overrides: Partial<GpuServices>) {
  const services: GpuServices = {
    environment: () => ({ gpu: fakeGpu, secureContext: true }),
    inspect: vi.fn(async () => report),
    probe: vi.fn(async () => passed),
    probeInWorker: vi.fn(async () => passed),
    ...overrides,
  };
  return { store: createStudioStore({ gpu: services }), services };
}

describe('gpu slice: detection', () => {
  it('starts out probing', () => {
    expect(storeWith({}).store.getState().gpu.status).toBe('probing');
  });

  it('is ready with the adapter, limits, features and probe result when everything works', async () => {
    const { store, services } = storeWith({});
    await store.getState().detectGpu();
    const { gpu } = store.getState();
    expect(gpu).toMatchObject({
      status: 'ready',
      message: null,
      adapter: { vendor: 'google', architecture: 'swiftshader', isFallbackAdapter: true },
      limits: report.limits,
      features: report.features,
      shaderF16: false,
      probe: passed,
    });
    expect(services.probe).toHaveBeenCalledWith(fakeGpu);
  });

  it('holds plain data only, so it can be cloned and serialised', async () => {
    const { store } = storeWith({});
    await store.getState().detectGpu();
    const { gpu } = store.getState();
    expect(structuredClone(gpu)).toEqual(gpu);
    expect(JSON.parse(JSON.stringify(gpu))).toEqual(gpu);
  });

  it('explains secure contexts when navigator.gpu is missing on an insecure page', async () => {
    const { store } = storeWith({ environment: () => ({ gpu: undefined, secureContext: false }) });
    await store.getState().detectGpu();
    expect(store.getState().gpu).toMatchObject({ status: 'unavailable', message: GPU_MESSAGES.insecure });
  });

  it('recommends a WebGPU browser when navigator.gpu is missing on a secure page', async () => {
    const { store, services } = storeWith({ environment: () => ({ gpu: undefined, secureContext: true }) });
    await store.getState().detectGpu();
    expect(store.getState().gpu).toMatchObject({ status: 'unavailable', message: GPU_MESSAGES.missing });
    expect(services.inspect).not.toHaveBeenCalled();
  });

  it('says what to check when no adapter is granted', async () => {
    const { store, services } = storeWith({ inspect: async () => null });
    await store.getState().detectGpu();
    expect(store.getState().gpu).toMatchObject({
      status: 'unavailable',
      message: GPU_MESSAGES.noAdapter,
      adapter: null,
    });
    expect(services.probe).not.toHaveBeenCalled();
  });

  it('reports a failing adapter request as an error', async () => {
    const { store } = storeWith({
      inspect: async () => {
        throw new Error('adapter request exploded');
      },
    });
    await store.getState().detectGpu();
    expect(store.getState().gpu.status).toBe('error');
    expect(store.getState().gpu.message).toContain('adapter request exploded');
  });

  it('keeps the adapter but reports an error when the self-test finds mismatches', async () => {
    const { store } = storeWith({ probe: async () => failed });
    await store.getState().detectGpu();
    const { gpu } = store.getState();
    expect(gpu.status).toBe('error');
    expect(gpu.adapter?.vendor).toBe('google');
    expect(gpu.probe).toEqual(failed);
    expect(gpu.message).toContain('12 of 4099');
    expect(gpu.message).toContain('got 0x3fc1, expected 0x3fc2');
  });

  it('reports a self-test that throws', async () => {
    const { store } = storeWith({
      probe: async () => {
        throw new Error('device lost');
      },
    });
    await store.getState().detectGpu();
    expect(store.getState().gpu).toMatchObject({ status: 'error', probe: null });
    expect(store.getState().gpu.message).toContain('device lost');
  });

  it('runs detection once for concurrent calls', async () => {
    const { store, services } = storeWith({});
    await Promise.all([store.getState().detectGpu(), store.getState().detectGpu()]);
    expect(services.inspect).toHaveBeenCalledTimes(1);
    await store.getState().detectGpu();
    expect(services.inspect).toHaveBeenCalledTimes(2);
  });
});

describe('gpu slice: self-test in a worker', () => {
  it('goes idle → running → done with the result', async () => {
    const { store } = storeWith({});
    expect(store.getState().gpu.worker.status).toBe('idle');
    const run = store.getState().runWorkerProbe();
    expect(store.getState().gpu.worker.status).toBe('running');
    await run;
    expect(store.getState().gpu.worker).toEqual({ status: 'done', result: passed, message: null });
  });

  it('shows why the worker failed', async () => {
    const { store } = storeWith({
      probeInWorker: async () => {
        throw new Error('no navigator.gpu in workers');
      },
    });
    await store.getState().runWorkerProbe();
    expect(store.getState().gpu.worker.status).toBe('error');
    expect(store.getState().gpu.worker.message).toContain('no navigator.gpu in workers');
  });

  it('marks a worker result with mismatches as an error', async () => {
    const { store } = storeWith({ probeInWorker: async () => failed });
    await store.getState().runWorkerProbe();
    expect(store.getState().gpu.worker).toMatchObject({ status: 'error', result: failed });
  });

  it('survives a new detection without losing the worker result', async () => {
    const { store } = storeWith({});
    await store.getState().runWorkerProbe();
    await store.getState().detectGpu();
    expect(store.getState().gpu.worker.result).toEqual(passed);
  });
});

describe('test API', () => {
  it('resolves gpuSettled only after detection finishes', async () => {
    let finish: (result: ProbeResult) => void = () => undefined;
    const { store } = storeWith({ probe: () => new Promise((resolve) => (finish = resolve)) });
    const api = createTestApi(store);
    const detection = store.getState().detectGpu();
    let settled = false;
    const waiting = api.gpuSettled().then((gpu) => {
      settled = true;
      return gpu;
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(settled).toBe(false);
    finish(passed);
    await detection;
    expect((await waiting).status).toBe('ready');
    expect(api.gpu().probe).toEqual(passed);
  });

  it('runs the worker probe through the store', async () => {
    const { store, services } = storeWith({});
    const worker = await createTestApi(store).runWorkerProbe();
    expect(worker.status).toBe('done');
    expect(services.probeInWorker).toHaveBeenCalledTimes(1);
  });
});

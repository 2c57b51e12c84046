// The one harness of the real-WebGPU tests: a dawn.node device (SwiftShader when no GPU driver
// works), error scopes that must come back empty, a ledger of buffers that must all be destroyed,
// and a clear skip reason when no adapter exists.

import { acquireNodeGpu, type NodeGpu } from '../cli/node-gpu.ts';
import { describeAdapter, requestEngineDevice, type EngineDevice } from '../engine/gpu/device.ts';
import { createGpuEngine, type GpuEngineOptions } from '../engine/gpu/gpu-engine.ts';
import type { MergeEngine } from '../engine/contract.ts';
import type { TensorInput } from '../methods/tensors.ts';
import type { MethodParams } from '../methods/types.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import { mergeBytes } from './tensors.ts';
import { decodeFloats } from '../format/dtype.ts';

const SCOPES: readonly GPUErrorFilter[] = ['validation', 'out-of-memory', 'internal'];

export interface GpuHarness {
  device: GPUDevice;
  adapterDescription: string;
  /** Runs `body` inside error scopes and throws if any GPU error was captured. */
  run<T>(body: () => Promise<T>): Promise<T>;
  /** Labels of buffers created on the device and not destroyed. */
  liveBuffers(): string[];
  /** Another device of the same adapter, for tests that lose or destroy it. */
  newDevice(): Promise<EngineDevice>;
  close(): void;
}

export type HarnessResult = { harness: GpuHarness; skip?: undefined } | { harness?: undefined; skip: string };

function trackBuffers(device: GPUDevice): Map<GPUBuffer, string> {
  const live = new Map<GPUBuffer, string>();
  const create = device.createBuffer.bind(device);
  device.createBuffer = (descriptor: GPUBufferDescriptor): GPUBuffer => {
    const buffer = create(descriptor);
    live.set(buffer, descriptor.label ?? '(unlabelled)');
    const destroy = buffer.destroy.bind(buffer);
    buffer.destroy = (): undefined => {
      live.delete(buffer);
      return destroy();
    };
    return buffer;
  };
  return live;
}

export async function openGpuHarness(): Promise<HarnessResult> {
  let node: NodeGpu;
  try {
    node = await acquireNodeGpu();
  } catch (error) {
    return { skip: `no WebGPU adapter: ${(error as Error).message}` };
  }
  let engineDevice: EngineDevice;
  try {
    engineDevice = await requestEngineDevice(node.gpu);
  } catch (error) {
    node.release();
    return { skip: `no WebGPU device: ${(error as Error).message}` };
  }
  const { device } = engineDevice;
  const live = trackBuffers(device);
  return {
    harness: {
      device,
      adapterDescription: `${describeAdapter(engineDevice.adapterInfo)} via ${node.driver}`,
      async run(body) {
        for (const scope of SCOPES) device.pushErrorScope(scope);
        let result: Awaited<ReturnType<typeof body>> | undefined;
        let failure: unknown;
        try {
          result = await body();
        } catch (error) {
          failure = error;
        }
        const errors: string[] = [];
        for (let i = 0; i < SCOPES.length; i++) {
          const error = await device.popErrorScope();
          if (error) errors.push(error.message);
        }
        if (errors.length) throw new Error(`GPU errors: ${errors.join('\n')}`);
        if (failure !== undefined) throw failure;
        return result as Awaited<ReturnType<typeof body>>;
      },
      liveBuffers: () => [...live.values()],
      newDevice: () => requestEngineDevice(node.gpu),
      close() {
        engineDevice.destroy();
        node.release();
      },
    },
  };
}

/**
 * Runs `use` inside the harness's error scopes with a GPU engine whose outputs are poisoned before
 * every window (so an unwritten word shows), and destroys the engine afterwards.
 */
export async function withGpuEngine<T>(
  harness: GpuHarness,
  options: Omit<GpuEngineOptions, 'adapterDescription' | 'poisonOutput'>,
  use: (gpu: MergeEngine) => Promise<T>,
): Promise<T> {
  const gpu = createGpuEngine(harness.device, {
    ...options,
    adapterDescription: harness.adapterDescription,
    poisonOutput: true,
  });
  try {
    return await harness.run(() => use(gpu));
  } finally {
    gpu.destroy();
  }
}

/** `input` merged by `engine` with `params` into f32, decoded. */
export async function mergedF32(
  engine: MergeEngine,
  input: TensorInput,
  params: MethodParams,
): Promise<Float64Array> {
  const bytes = await mergeBytes(engine, input, { params, lambdas: [], outDtype: 'F32' });
  return decodeFloats('F32', bytes, input.numel);
}

/**
 * One tensor merged into f32 by a fresh GPU engine (withGpuEngine: poisoned output, error scopes) and
 * by the CPU engine with the same agents and windows: what the engine-versus-CPU tests compare.
 */
export async function gpuAndCpu(
  harness: GpuHarness,
  options: Omit<GpuEngineOptions, 'adapterDescription' | 'poisonOutput'>,
  input: TensorInput,
  params: MethodParams,
): Promise<{ gpu: Float64Array; cpu: Float64Array }> {
  const gpu = await withGpuEngine(harness, options, (engine) => mergedF32(engine, input, params));
  const cpuEngine = createCpuEngine({ agents: options.agents, maxWindowElements: options.maxWindowElements });
  return { gpu, cpu: await mergedF32(cpuEngine, input, params) };
}

// Finds a WebGPU adapter for Node through dawn.node: a real GPU when the system's Vulkan drivers
// give one, otherwise Chromium's SwiftShader (a CPU implementation: correct, slow).
//
// Lifetime, the cause of the crashes ENVIRONMENT.md describes: dawn.node's adapters and devices do
// not keep the instance that `create()` returned alive. Once TurboFan has optimised the calling
// frame, a local that is not used again is no longer a GC root; a collection then finalises the
// instance under a live device, and Dawn's threads crash (segfault, futex or mutex errors). So every
// instance is held here, in module scope, until release().
import { existsSync } from 'node:fs';
import { DAWN_TICKS_ENV, paceNativeTicks } from './tick-pacing.ts';

export const SWIFTSHADER_ICDS = [
  '/usr/lib/chromium/vk_swiftshader_icd.json',
  '/usr/lib64/chromium/vk_swiftshader_icd.json',
  '/usr/lib/chromium-browser/vk_swiftshader_icd.json',
];

export interface NodeGpu {
  gpu: GPU;
  adapter: GPUAdapter;
  /** Which driver gave the adapter: the system's, or SwiftShader from the ICD file named. */
  driver: string;
  /** Lets the instance go once no device of it is used any more (the process can then exit). */
  release(): void;
}

const liveInstances = new Set<GPU>();

export class NoGpuError extends Error {
  override name = 'NoGpuError';
}

let globalsInstalled = false;

async function loadDawn(): Promise<typeof import('webgpu')> {
  const dawn = await import('webgpu');
  if (!globalsInstalled) {
    Object.assign(globalThis, dawn.globals);
    // Its promises settle through a tick loop that would spin a core while any is pending
    // (MERGE_STUDIO_DAWN_TICKS=spin keeps that loop, for `npm run bench -- --cli-only --dawn-ticks both`).
    if (process.env[DAWN_TICKS_ENV] !== 'spin') paceNativeTicks();
    globalsInstalled = true;
  }
  return dawn;
}

async function tryCreate(dawn: typeof import('webgpu'), driver: string): Promise<NodeGpu | undefined> {
  const gpu = dawn.create([]);
  liveInstances.add(gpu);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    liveInstances.delete(gpu);
    return undefined;
  }
  return { gpu, adapter, driver, release: () => liveInstances.delete(gpu) };
}

/**
 * Tries the system's Vulkan drivers first (unless VK_ICD_FILENAMES already chooses one), then
 * SwiftShader. dawn.node warns on stderr while probing drivers it rejects; those lines are
 * harmless and are not ours to silence.
 */
export async function acquireNodeGpu(): Promise<NodeGpu> {
  let dawn: typeof import('webgpu');
  try {
    dawn = await loadDawn();
  } catch (error) {
    throw new NoGpuError(
      `dawn.node (npm package "webgpu") could not be loaded: ${(error as Error).message}. ` +
        'Run `npm install`, or use --cpu to merge with the CPU reference.',
    );
  }
  const chosen = process.env.VK_ICD_FILENAMES;
  const first = await tryCreate(dawn, chosen ? `Vulkan ICD ${chosen}` : 'system Vulkan driver');
  if (first || chosen) {
    if (first) return first;
    throw new NoGpuError(
      `No WebGPU adapter with VK_ICD_FILENAMES=${chosen}. Unset it to let merge-studio choose, or use --cpu.`,
    );
  }
  const icd = SWIFTSHADER_ICDS.find((file) => existsSync(file));
  if (icd) {
    process.env.VK_ICD_FILENAMES = icd;
    const fallback = await tryCreate(dawn, `SwiftShader (${icd})`);
    if (fallback) return fallback;
  }
  throw new NoGpuError(
    'No WebGPU adapter found: no usable Vulkan driver (is libvulkan1 installed?) and no SwiftShader ' +
      '(apt-get install chromium provides one). Use --cpu to merge with the CPU reference instead.',
  );
}

/**
 * The device every CLI command computes on (merge, analyze, eval): the engine's limits on the first
 * adapter acquireNodeGpu finds, and how the CLI names it ("NVIDIA H200 via system Vulkan driver").
 */
export async function nodeEngineDevice(): Promise<{ device: GPUDevice; description: string }> {
  const { requestEngineDevice, describeAdapter } = await import('../engine/gpu/device.ts');
  const node = await acquireNodeGpu();
  const { device, adapterInfo } = await requestEngineDevice(node.gpu);
  return { device, description: `${describeAdapter(adapterInfo)} via ${node.driver}` };
}

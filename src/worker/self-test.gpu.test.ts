// The adapter report and the engine self-test on a real WebGPU implementation in Node: dawn.node on
// SwiftShader's Vulkan driver.
import { afterAll, describe, expect, it } from 'vitest';
import { inspectGpu } from './probe.ts';
import { runSelfTest, SELF_TEST_ELEMENTS } from './self-test.ts';

// Dawn reads the driver list when it first loads Vulkan, so this must precede create().
process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
const { create, globals } = await import('webgpu');
Object.assign(globalThis, globals);
// Released in afterAll: dawn.node keeps the process alive while this object is referenced.
let gpu: GPU | null = create([]);
const adapterFound = (await gpu.requestAdapter()) !== null;
if (!adapterFound) {
  const reason = `no WebGPU adapter from dawn.node (VK_ICD_FILENAMES=${process.env.VK_ICD_FILENAMES})`;
  // CI machines are set up to have one, so there a missing adapter is a failure, not a skip.
  if (process.env.CI) throw new Error(reason);
  console.warn(`Skipping the GPU probe tests: ${reason}`);
}

function requireGpu(): GPU {
  if (!gpu) throw new Error('The dawn.node instance was already released.');
  return gpu;
}

afterAll(() => {
  gpu = null;
});

describe.skipIf(!adapterFound)('GPU probe on dawn.node', () => {
  it('reports the adapter as plain data', async () => {
    const report = await inspectGpu(requireGpu());
    expect(report).not.toBeNull();
    expect(report?.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 1024 * 1024);
    expect(report?.limits.maxComputeWorkgroupsPerDimension).toBeGreaterThanOrEqual(65535);
    expect(report?.shaderF16).toBe(report?.features.includes('shader-f16'));
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
  });

  async function withDevice<T>(label: string, body: (device: GPUDevice) => Promise<T>): Promise<T> {
    const adapter = await requireGpu().requestAdapter();
    if (!adapter) throw new Error('The adapter disappeared between tests.');
    const device = await adapter.requestDevice({ label });
    try {
      return await body(device);
    } finally {
      device.destroy();
    }
  }

  it('runs the convert kernel and a RAM merge through the engine, matching the CPU bit for bit', async () => {
    const result = await withDevice('SelfTestTest.device', (device) => runSelfTest(device, 'dawn.node'));
    expect(result).toMatchObject({
      ok: true,
      elements: SELF_TEST_ELEMENTS,
      mismatches: 0,
      firstMismatch: null,
    });
    expect(result.ms).toBeGreaterThan(0);
  });

  it('stays correct over repeated runs, other seeds and sizes on one device', async () => {
    // Repetition on one device is what the dawn.node crash needs to show up (ENVIRONMENT.md).
    await withDevice('SelfTestTest.repeated', async (device) => {
      for (const [elements, seed] of [
        [1, 7],
        [2, 8],
        [129, 9],
        [20_001, 10],
      ] as const) {
        const result = await runSelfTest(device, 'dawn.node', { elements, seed });
        expect(result, `${elements} elements, seed ${seed}`).toMatchObject({
          ok: true,
          elements,
          mismatches: 0,
        });
      }
    });
  });

  it('turns a lost device into an error instead of a result', async () => {
    const adapter = await requireGpu().requestAdapter();
    if (!adapter) throw new Error('The adapter disappeared between tests.');
    const device = await adapter.requestDevice({ label: 'SelfTestTest.lostDevice' });
    device.destroy();
    await expect(runSelfTest(device, 'dawn.node')).rejects.toThrow();
  });

  it('names the problem when asked for an impossible size', async () => {
    await withDevice('SelfTestTest.size', async (device) => {
      await expect(runSelfTest(device, 'dawn.node', { elements: 0 })).rejects.toThrow(RangeError);
    });
  });
});

import { describe, expect, it } from 'vitest';
import { describeAdapter, GpuDeviceError, requestEngineDevice, watchDevice } from './device.ts';
import { Scheduler } from './scheduler.ts';

class GPUValidationError {
  constructor(readonly message: string) {}
}
class GPUOutOfMemoryError {
  constructor(readonly message: string) {}
}

/** The parts of a GPUDevice that device.ts and scheduler.ts touch, with loss and errors on demand. */
class FakeDevice extends EventTarget {
  destroyed = false;
  private loseWith: (info: { reason: string; message: string }) => void = () => undefined;
  readonly lost = new Promise<{ reason: string; message: string }>((resolve) => (this.loseWith = resolve));
  readonly limits = { maxStorageBufferBindingSize: 1 << 30, maxBufferSize: 1 << 30 };
  readonly queue = {
    writeBuffer: () => undefined,
    submit: () => undefined,
    onSubmittedWorkDone: () => new Promise<void>(() => undefined),
  };
  createCommandEncoder() {
    return { finish: () => ({}) };
  }
  lose(reason: string): void {
    this.loseWith({ reason, message: `lost: ${reason}` });
  }
  fail(error: object): void {
    this.dispatchEvent(Object.assign(new Event('uncapturederror'), { error }));
  }
  destroy(): void {
    this.destroyed = true;
    this.lose('destroyed');
  }
}

const asDevice = (d: FakeDevice): GPUDevice => d as unknown as GPUDevice;
/** A buffer whose mapping never completes, as on a hung or lost device. */
const hungBuffer = {
  label: 'hung',
  mapAsync: () => new Promise<void>(() => undefined),
} as unknown as GPUBuffer;
(globalThis as Record<string, unknown>).GPUMapMode ??= { READ: 1, WRITE: 2 };

describe('describeAdapter', () => {
  it('writes one line from the adapter info', () => {
    expect(
      describeAdapter({
        vendor: 'google',
        architecture: 'swiftshader',
        device: 'swiftshader-device-subzero-',
        description: 'SwiftShader Device (Subzero)',
      }),
    ).toBe('google swiftshader (SwiftShader Device (Subzero))');
    expect(
      describeAdapter({
        vendor: 'nvidia',
        architecture: '',
        device: 'H200',
        description: '',
        isFallback: false,
      }),
    ).toBe('nvidia (H200)');
    expect(
      describeAdapter({ vendor: '', architecture: '', device: '', description: '', isFallback: true }),
    ).toBe('unknown adapter, fallback adapter');
  });
});

describe('watchDevice', () => {
  it('turns uncaptured errors and loss into typed GpuDeviceErrors until stopped', async () => {
    const device = new FakeDevice();
    const seen: GpuDeviceError[] = [];
    const stop = watchDevice(asDevice(device), (e) => seen.push(e));
    device.fail(new GPUValidationError('bad binding'));
    device.fail(new GPUOutOfMemoryError('no room'));
    device.lose('unknown');
    await device.lost;
    await Promise.resolve();
    expect(seen.map((e) => [e.name, e.kind, e.reason])).toEqual([
      ['GpuDeviceError', 'validation', undefined],
      ['GpuDeviceError', 'out-of-memory', undefined],
      ['GpuDeviceError', 'lost', 'unknown'],
    ]);
    expect(seen[1]!.message).toMatch(/no room.*Close other GPU-heavy/);
    stop();
    device.fail(new GPUValidationError('after'));
    expect(seen.length).toBe(3);
  });
});

describe('requestEngineDevice', () => {
  it('says so when there is no adapter', async () => {
    const gpu = { requestAdapter: async () => null } as unknown as GPU;
    await expect(requestEngineDevice(gpu)).rejects.toMatchObject({
      name: 'GpuDeviceError',
      kind: 'no-adapter',
    });
  });

  it('asks for the adapter’s limits, reports loss to onLost and stops on destroy()', async () => {
    const device = new FakeDevice();
    let asked: GPUDeviceDescriptor | undefined;
    const adapter = {
      limits: {
        maxStorageBufferBindingSize: 1 << 30,
        maxBufferSize: 1 << 31,
        maxComputeWorkgroupsPerDimension: 65535,
        maxComputeWorkgroupStorageSize: 32768,
        maxComputeInvocationsPerWorkgroup: 256,
        maxStorageBuffersPerShaderStage: 12,
      },
      info: { vendor: 'v', architecture: 'a', device: 'd', description: 'x', isFallbackAdapter: true },
      requestDevice: async (descriptor: GPUDeviceDescriptor) => {
        asked = descriptor;
        return device;
      },
    };
    const gpu = { requestAdapter: async () => adapter } as unknown as GPU;
    const lost: GpuDeviceError[] = [];
    const result = await requestEngineDevice(gpu, { onLost: (e) => lost.push(e) });
    expect(asked!.requiredLimits).toMatchObject({
      maxBufferSize: 1 << 31,
      maxComputeWorkgroupStorageSize: 32768,
    });
    expect(result.adapterInfo).toEqual({
      vendor: 'v',
      architecture: 'a',
      device: 'd',
      description: 'x',
      isFallback: true,
    });
    device.lose('unknown');
    await device.lost;
    await Promise.resolve();
    expect(lost.map((e) => e.kind)).toEqual(['lost']);
    result.destroy();
    result.destroy();
    expect(device.destroyed).toBe(true);
  });
});

describe('Scheduler', () => {
  it('rejects an in-flight read-back when the device reports an error, instead of hanging', async () => {
    const device = new FakeDevice();
    const scheduler = new Scheduler(asDevice(device), 'Test');
    const reading = scheduler.read(hungBuffer, 4);
    device.fail(new GPUValidationError('invalid dispatch'));
    await expect(reading).rejects.toMatchObject({ name: 'GpuDeviceError', kind: 'validation' });
    expect(() => scheduler.submit('after', () => undefined)).toThrow(GpuDeviceError);
    scheduler.destroy();
  });

  it('rejects in-flight work when the device is lost', async () => {
    const device = new FakeDevice();
    const scheduler = new Scheduler(asDevice(device), 'Test');
    const idle = scheduler.idle();
    const reading = scheduler.read(hungBuffer, 4);
    device.lose('unknown');
    await expect(idle).rejects.toMatchObject({ kind: 'lost' });
    await expect(reading).rejects.toMatchObject({ kind: 'lost' });
    scheduler.destroy();
  });

  it('turns a failed mapping into a GpuDeviceError, never an AbortError', async () => {
    const device = new FakeDevice();
    const scheduler = new Scheduler(asDevice(device), 'Test');
    const aborted = {
      label: 'readback',
      mapAsync: () => Promise.reject(new DOMException('unmapped', 'AbortError')),
    } as unknown as GPUBuffer;
    await expect(scheduler.read(aborted, 4)).rejects.toMatchObject({
      name: 'GpuDeviceError',
      kind: 'internal',
    });
    scheduler.destroy();
  });
});

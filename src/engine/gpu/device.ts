// Gets a WebGPU device with the adapter's largest buffer and dispatch limits, and turns device loss
// and uncaptured errors into a typed GpuDeviceError delivered to callbacks, never a silent hang.

export type GpuErrorKind = 'no-adapter' | 'lost' | 'validation' | 'out-of-memory' | 'internal';

const ADVICE: Record<GpuErrorKind, string> = {
  'no-adapter': 'Use a browser with WebGPU enabled, or merge with the CPU engine.',
  lost: 'The GPU was reset or the device was destroyed; start the merge again (or use the CPU engine).',
  validation: 'This is a bug in Merge Studio; please report it with the message above.',
  'out-of-memory': 'Close other GPU-heavy tabs or programs, or use a smaller window size.',
  internal: 'The GPU driver failed; start the merge again, or use the CPU engine.',
};

export class GpuDeviceError extends Error {
  override readonly name = 'GpuDeviceError';
  constructor(
    readonly kind: GpuErrorKind,
    detail: string,
    /** GPUDeviceLostInfo.reason for kind 'lost' ('destroyed' when our own code destroyed it). */
    readonly reason?: string,
  ) {
    super(`WebGPU ${kind === 'lost' ? 'device lost' : `${kind} error`}: ${detail} ${ADVICE[kind]}`);
  }
}

export interface AdapterDescription {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallback?: boolean;
}

export interface EngineLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupsPerDimension: number;
  maxComputeWorkgroupStorageSize: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxStorageBuffersPerShaderStage: number;
}

const LIMIT_NAMES = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupsPerDimension',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxStorageBuffersPerShaderStage',
] as const satisfies readonly (keyof EngineLimits)[];

export interface EngineDevice {
  device: GPUDevice;
  adapterInfo: AdapterDescription;
  limits: EngineLimits;
  /** Stops the callbacks, then destroys the device. Idempotent. */
  destroy(): void;
}

export interface EngineDeviceOptions {
  powerPreference?: GPUPowerPreference;
  forceFallbackAdapter?: boolean;
  onLost?(error: GpuDeviceError): void;
  onError?(error: GpuDeviceError): void;
}

/** One line for logs and the UI, e.g. "google swiftshader (SwiftShader driver 5.0.0)". */
export function describeAdapter(info: AdapterDescription): string {
  const name = [info.vendor, info.architecture].filter(Boolean).join(' ') || 'unknown adapter';
  const detail = info.description || info.device;
  return `${name}${detail ? ` (${detail})` : ''}${info.isFallback ? ', fallback adapter' : ''}`;
}

function errorKind(error: GPUError): GpuErrorKind {
  const type = error.constructor.name;
  if (type === 'GPUOutOfMemoryError') return 'out-of-memory';
  if (type === 'GPUInternalError') return 'internal';
  return 'validation';
}

/**
 * Calls `listener` on an uncaptured error and when the device is lost (also when destroyed on
 * purpose: the error's reason says so). Returns the function that stops it.
 */
export function watchDevice(device: GPUDevice, listener: (error: GpuDeviceError) => void): () => void {
  let active = true;
  const onError = (event: Event): void => {
    const error = (event as GPUUncapturedErrorEvent).error;
    if (active) listener(new GpuDeviceError(errorKind(error), error.message));
  };
  device.addEventListener('uncapturederror', onError);
  void device.lost.then((info) => {
    if (active) listener(new GpuDeviceError('lost', info.message || info.reason, info.reason));
  });
  return () => {
    active = false;
    device.removeEventListener('uncapturederror', onError);
  };
}

export async function requestEngineDevice(gpu: GPU, opts: EngineDeviceOptions = {}): Promise<EngineDevice> {
  const adapter = await gpu.requestAdapter({
    powerPreference: opts.powerPreference ?? 'high-performance',
    ...(opts.forceFallbackAdapter ? { forceFallbackAdapter: true } : {}),
  });
  if (!adapter) throw new GpuDeviceError('no-adapter', 'no WebGPU adapter is available.');
  // Spec defaults are far below what adapters offer (128 MiB bindings); windows scale with these.
  const requiredLimits: Record<string, number> = {};
  for (const name of LIMIT_NAMES) requiredLimits[name] = adapter.limits[name];
  const device = await adapter.requestDevice({ label: 'MergeStudio.device', requiredLimits });
  const unwatch = watchDevice(device, (error) =>
    (error.kind === 'lost' ? opts.onLost : opts.onError)?.(error),
  );
  const info = adapter.info;
  const limits = Object.fromEntries(
    LIMIT_NAMES.map((name) => [name, device.limits[name]]),
  ) as unknown as EngineLimits;
  let destroyed = false;
  return {
    device,
    adapterInfo: {
      vendor: info.vendor,
      architecture: info.architecture,
      device: info.device,
      description: info.description,
      isFallback: (info as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter,
    },
    limits,
    destroy() {
      if (destroyed) return;
      destroyed = true;
      unwatch();
      device.destroy();
    },
  };
}

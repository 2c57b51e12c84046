// What the studio shows about WebGPU at start: the adapter summary as plain data, and the shape of the
// self-test's result (src/worker/self-test.ts runs it in the engine worker) with its bitwise comparison.

export interface ProbeMismatch {
  index: number;
  /** bf16 bits computed on the CPU. */
  expected: number;
  /** bf16 bits read back from the GPU. */
  actual: number;
}

export interface ProbeResult {
  ok: boolean;
  elements: number;
  mismatches: number;
  /** Milliseconds from creating the first GPU resource to the checked readback (device setup excluded). */
  ms: number;
  firstMismatch: ProbeMismatch | null;
}

/** The limits that decide how large a tensor window and how many agents one dispatch can take. */
export interface GpuKeyLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupsPerDimension: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupStorageSize: number;
  maxStorageBuffersPerShaderStage: number;
}

export const KEY_LIMITS: readonly (keyof GpuKeyLimits)[] = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupsPerDimension',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupStorageSize',
  'maxStorageBuffersPerShaderStage',
];

/** What an adapter reports about itself, as plain data. */
export interface GpuReport {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
  limits: GpuKeyLimits;
  features: string[];
  shaderF16: boolean;
}

/** Summarises the default adapter, or returns null when the browser grants none. */
export async function inspectGpu(gpu: GPU): Promise<GpuReport | null> {
  const adapter = await gpu.requestAdapter();
  if (!adapter) return null;
  // adapter.info arrived in Chromium 114 and info.isFallbackAdapter later; older builds lack them.
  const info = (adapter.info as GPUAdapterInfo | undefined) ?? null;
  const legacyFallback = (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter;
  const limits = {} as GpuKeyLimits;
  for (const name of KEY_LIMITS) limits[name] = adapter.limits[name];
  return {
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    device: info?.device ?? '',
    description: info?.description ?? '',
    isFallbackAdapter: info?.isFallbackAdapter ?? legacyFallback ?? false,
    limits,
    features: [...adapter.features].sort(),
    shaderF16: adapter.features.has('shader-f16'),
  };
}

/** Bitwise comparison: a NaN with another payload or a zero of the other sign counts as a mismatch. */
export function compareBf16(
  expected: Uint16Array,
  actual: Uint16Array,
): { mismatches: number; firstMismatch: ProbeMismatch | null } {
  if (expected.length !== actual.length) {
    throw new RangeError(`Cannot compare ${expected.length} expected values with ${actual.length} actual.`);
  }
  let mismatches = 0;
  let firstMismatch: ProbeMismatch | null = null;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] === actual[i]) continue;
    mismatches++;
    firstMismatch ??= { index: i, expected: expected[i]!, actual: actual[i]! };
  }
  return { mismatches, firstMismatch };
}

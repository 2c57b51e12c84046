// The GPU self-test and adapter summary that the app shows at start: a seeded bf16 kernel run on the
// device and checked bit for bit against the CPU codecs. Runs unchanged in a page, a worker and Node.
import probeWgsl from '../../shaders/probe.wgsl?raw';
import { bf16ToF32, f32ToBf16 } from '../format/dtype.ts';

/** Odd on purpose, so the padded upper half of the last packed word is exercised. */
export const PROBE_ELEMENTS = 4099;
export const PROBE_SEED = 0x2f6ba1c3;
export const PROBE_WORKGROUP_SIZE = 64;

/** Binding numbers and uniform layout of shaders/probe.wgsl, checked against its reflection in tests. */
export const PROBE_BINDINGS = { params: 0, a: 1, b: 2, result: 3 } as const;
export const PROBE_PARAMS_LAYOUT = { size: 8, scaleOffset: 0, countOffset: 4 } as const;

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

export interface ProbeOptions {
  elements?: number;
  seed?: number;
}

/** Inputs of one probe run: two bf16 streams and a bf16-representable scale. */
export interface ProbeData {
  a: Uint16Array;
  b: Uint16Array;
  scale: number;
}

export type GpuProbeErrorCode = 'no-adapter' | 'gpu-error';

export class GpuProbeError extends Error {
  override readonly name = 'GpuProbeError';
  constructor(
    readonly code: GpuProbeErrorCode,
    message: string,
  ) {
    super(message);
  }
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

/** Requests the default adapter and a device, runs the self-test on it, and destroys the device. */
export async function probeGpu(gpu: GPU, options: ProbeOptions = {}): Promise<ProbeResult> {
  const adapter = await gpu.requestAdapter();
  if (!adapter) {
    throw new GpuProbeError('no-adapter', 'No WebGPU adapter is available, so the self-test cannot run.');
  }
  const device = await adapter.requestDevice({ label: 'Probe.device' });
  try {
    return await probeDevice(device, options);
  } finally {
    device.destroy();
  }
}

/** Runs the self-test on a caller-owned device; every resource it creates is destroyed before it returns. */
export async function probeDevice(device: GPUDevice, options: ProbeOptions = {}): Promise<ProbeResult> {
  const elements = options.elements ?? PROBE_ELEMENTS;
  if (!Number.isInteger(elements) || elements < 1) {
    throw new RangeError(`The probe needs a positive whole number of elements, got ${elements}.`);
  }
  const data = makeProbeData(elements, options.seed ?? PROBE_SEED);
  const expected = probeReference(data);
  const started = performance.now();
  const actual = await runProbeKernel(device, data);
  const { mismatches, firstMismatch } = compareBf16(expected, actual);
  return { ok: mismatches === 0, elements, mismatches, ms: performance.now() - started, firstMismatch };
}

/** Seeded inputs: signs mixed, exponents within 2^±20 so no value or result is subnormal, zero or infinite. */
export function makeProbeData(elements: number, seed: number): ProbeData {
  const next = mulberry32(seed);
  const randomBf16 = (exponentSpan: number): number => {
    const word = next();
    const sign = word >>> 31;
    const mantissa = word & 0x7f;
    const exponent = 127 - exponentSpan + (((word >>> 8) & 0xffff) % (2 * exponentSpan + 1));
    return (sign << 15) | (exponent << 7) | mantissa;
  };
  const a = new Uint16Array(elements);
  const b = new Uint16Array(elements);
  for (let i = 0; i < elements; i++) {
    a[i] = randomBf16(20);
    b[i] = randomBf16(20);
  }
  return { a, b, scale: bf16ToF32(randomBf16(1)) };
}

/** The CPU answer: widen, multiply-add in f32, narrow with round-to-nearest-even. */
export function probeReference(data: ProbeData): Uint16Array {
  const out = new Uint16Array(data.a.length);
  for (let i = 0; i < out.length; i++) {
    // The product of two bf16 values is exact, so this single f32 rounding matches the GPU's.
    out[i] = f32ToBf16(Math.fround(bf16ToF32(data.a[i]!) * data.scale + bf16ToF32(data.b[i]!)));
  }
  return out;
}

/** Two bf16 values per u32, low half first; an odd count leaves the last upper half zero. */
export function packBf16(values: Uint16Array): Uint32Array {
  const words = new Uint32Array(Math.ceil(values.length / 2));
  for (let i = 0; i < values.length; i++) words[i >>> 1]! |= values[i]! << ((i & 1) * 16);
  return words;
}

export function unpackBf16(words: Uint32Array, count: number): Uint16Array {
  const values = new Uint16Array(count);
  for (let i = 0; i < count; i++) values[i] = (words[i >>> 1]! >>> ((i & 1) * 16)) & 0xffff;
  return values;
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

async function runProbeKernel(device: GPUDevice, data: ProbeData): Promise<Uint16Array> {
  const count = data.a.length;
  const words = Math.ceil(count / 2);
  const byteLength = words * 4;
  const buffers: GPUBuffer[] = [];
  const buffer = (label: string, size: number, usage: number): GPUBuffer => {
    const created = device.createBuffer({ label, size, usage });
    buffers.push(created);
    return created;
  };

  device.pushErrorScope('internal');
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  let output: Uint16Array | null = null;
  let failure: unknown = null;
  try {
    const storageIn = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    const params = buffer(
      'Probe.params',
      PROBE_PARAMS_LAYOUT.size,
      GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    );
    const a = buffer('Probe.a', byteLength, storageIn);
    const b = buffer('Probe.b', byteLength, storageIn);
    const result = buffer('Probe.result', byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    const readback = buffer('Probe.readback', byteLength, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);

    const paramBytes = new ArrayBuffer(PROBE_PARAMS_LAYOUT.size);
    const paramView = new DataView(paramBytes);
    paramView.setFloat32(PROBE_PARAMS_LAYOUT.scaleOffset, data.scale, true);
    paramView.setUint32(PROBE_PARAMS_LAYOUT.countOffset, count, true);
    device.queue.writeBuffer(params, 0, paramBytes);
    device.queue.writeBuffer(a, 0, packBf16(data.a));
    device.queue.writeBuffer(b, 0, packBf16(data.b));

    const storage = (binding: number, type: GPUBufferBindingType): GPUBindGroupLayoutEntry => ({
      binding,
      visibility: GPUShaderStage.COMPUTE,
      buffer: { type },
    });
    const layout = device.createBindGroupLayout({
      label: 'Probe.bindGroupLayout',
      entries: [
        storage(PROBE_BINDINGS.params, 'uniform'),
        storage(PROBE_BINDINGS.a, 'read-only-storage'),
        storage(PROBE_BINDINGS.b, 'read-only-storage'),
        storage(PROBE_BINDINGS.result, 'storage'),
      ],
    });
    const pipeline = device.createComputePipeline({
      label: 'Probe.pipeline',
      layout: device.createPipelineLayout({ label: 'Probe.pipelineLayout', bindGroupLayouts: [layout] }),
      compute: {
        module: device.createShaderModule({ label: 'Probe.shader', code: probeWgsl }),
        entryPoint: 'main',
        constants: { WORKGROUP_SIZE: PROBE_WORKGROUP_SIZE },
      },
    });
    const bindGroup = device.createBindGroup({
      label: 'Probe.bindGroup',
      layout,
      entries: [
        { binding: PROBE_BINDINGS.params, resource: { buffer: params } },
        { binding: PROBE_BINDINGS.a, resource: { buffer: a } },
        { binding: PROBE_BINDINGS.b, resource: { buffer: b } },
        { binding: PROBE_BINDINGS.result, resource: { buffer: result } },
      ],
    });

    const encoder = device.createCommandEncoder({ label: 'Probe.encoder' });
    const pass = encoder.beginComputePass({ label: 'Probe.pass' });
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(Math.ceil(words / PROBE_WORKGROUP_SIZE));
    pass.end();
    encoder.copyBufferToBuffer(result, 0, readback, 0, byteLength);
    device.queue.submit([encoder.finish({ label: 'Probe.commands' })]);

    await readback.mapAsync(GPUMapMode.READ);
    output = unpackBf16(new Uint32Array(readback.getMappedRange().slice(0)), count);
    readback.unmap();
  } catch (error) {
    failure = error;
  }
  // Popped in the reverse order of pushing; a GPU error explains a failed map better than the map does.
  const scoped = await Promise.all([device.popErrorScope(), device.popErrorScope(), device.popErrorScope()]);
  for (const created of buffers) created.destroy();
  const errors = scoped.filter((error): error is GPUError => error !== null);
  if (errors.length > 0) {
    throw new GpuProbeError(
      'gpu-error',
      `The GPU reported: ${errors.map((error) => error.message).join('; ')}`,
    );
  }
  if (failure !== null) throw failure;
  if (output === null) throw new GpuProbeError('gpu-error', 'The self-test produced no output.');
  return output;
}

/** Small seeded generator (mulberry32): the same inputs on every platform. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

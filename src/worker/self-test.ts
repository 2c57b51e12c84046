// The GPU self-test the studio runs in its engine worker: the engine's own convert kernel (f32 → bf16,
// through the Scheduler) and a tiny RAM merge through createGpuEngine, each checked bit for bit
// against the CPU (the format codec and the CPU reference engine). So "passed" speaks for the code
// that merges, on the device that merges, with no codec of its own.
import { dtypeBits, encodeFloats, f32ToBf16, type FloatDtype } from '../format/dtype.ts';
import { defaultParams } from '../methods/defaults.ts';
import { seededRandom } from '../methods/rng.ts';
import { tensorInput } from '../methods/tensors.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import { createGpuEngine } from '../engine/gpu/gpu-engine.ts';
import { createConvertKernel } from '../engine/gpu/kernels/convert.ts';
import { encodeParams, PARAMS_BYTES } from '../engine/gpu/layout.ts';
import { mergeGroups, pad4, splitDispatch } from '../engine/gpu/plumbing.ts';
import { compareBf16, type ProbeResult } from './probe.ts';
import { Scheduler } from '../engine/gpu/scheduler.ts';
import type { MergeEngine } from '../engine/contract.ts';
import type { TensorInput } from '../methods/tensors.ts';

/** Odd on purpose, so the padded upper half of the last packed bf16 word is exercised. */
export const SELF_TEST_ELEMENTS = 4099;
export const SELF_TEST_SEED = 0x2f6ba1c3;
/** Two agents: RAM divides by how many agents changed an element (1 or 2), exact in f32 and f64. */
const RAM_AGENTS = 2;

export interface SelfTestOptions {
  elements?: number;
  seed?: number;
}

/** Runs both cases on a caller-owned device; every resource it creates is destroyed before it returns. */
export async function runSelfTest(
  device: GPUDevice,
  adapterDescription: string,
  options: SelfTestOptions = {},
): Promise<ProbeResult> {
  const elements = options.elements ?? SELF_TEST_ELEMENTS;
  if (!Number.isInteger(elements) || elements < 1) {
    throw new RangeError(`The self-test needs a positive whole number of elements, got ${elements}.`);
  }
  const random = seededRandom(options.seed ?? SELF_TEST_SEED);
  const started = performance.now();

  const f32 = randomF32(elements, random);
  const bytes = await convertOnGpu(device, new Uint8Array(f32.buffer), elements, 'F32', 'BF16');
  const converted = new Uint16Array(bytes.buffer, bytes.byteOffset, elements);
  const convertCheck = compareBf16(Uint16Array.from(f32, f32ToBf16), converted);

  const input = ramInput(elements, random);
  const gpu = createGpuEngine(device, { agents: RAM_AGENTS, adapterDescription });
  const cpu = createCpuEngine({ agents: RAM_AGENTS });
  let ramCheck: ReturnType<typeof compareBf16>;
  try {
    ramCheck = compareBf16(await mergeBf16(cpu, input), await mergeBf16(gpu, input));
  } finally {
    gpu.destroy();
    cpu.destroy();
  }

  // Mismatch indices count through both cases: the RAM case's elements follow the convert case's.
  const firstMismatch =
    convertCheck.firstMismatch ??
    (ramCheck.firstMismatch && { ...ramCheck.firstMismatch, index: elements + ramCheck.firstMismatch.index });
  const mismatches = convertCheck.mismatches + ramCheck.mismatches;
  return { ok: mismatches === 0, elements, mismatches, ms: performance.now() - started, firstMismatch };
}

/** f32 values with random mantissas (every bf16 rounding decision), exponents within 2^±20, mixed signs. */
function randomF32(elements: number, random: () => number): Float32Array {
  const bits = new Uint32Array(elements);
  for (let i = 0; i < elements; i++) {
    const sign = random() < 0.5 ? 0 : 1;
    const exponent = 107 + Math.floor(random() * 41);
    bits[i] = ((sign << 31) | (exponent << 23) | Math.floor(random() * 2 ** 23)) >>> 0;
  }
  return new Float32Array(bits.buffer);
}

/** Base and agents on a grid of 1/64 in [-4, 4]: τ, sums and halves are exact, so one rounding decides. */
function ramInput(elements: number, random: () => number): TensorInput {
  const grid = (): number => (Math.floor(random() * 513) - 256) / 64;
  const base = Array.from({ length: elements }, grid);
  // Each agent changes about a third of the elements, so counts of 0, 1 and 2 agents all occur.
  const agents = Array.from({ length: RAM_AGENTS }, () => base.map((b) => (random() < 0.35 ? grid() : b)));
  return tensorInput(
    'self-test.ram',
    'BF16',
    [base, ...agents].map((v) => encodeFloats('BF16', v)),
  );
}

async function mergeBf16(engine: MergeEngine, input: TensorInput): Promise<Uint16Array> {
  const chunks: Uint8Array[] = [];
  await engine.merge(input, {
    params: defaultParams('ram', RAM_AGENTS),
    lambdas: [],
    outDtype: 'BF16',
    emit: async (bytes) => {
      chunks.push(bytes.slice());
    },
  });
  const out = new Uint8Array(input.numel * 2);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return new Uint16Array(out.buffer);
}

/**
 * Re-encodes `count` elements with the engine's convert kernel through its Scheduler, as the merge
 * passes run; returns the output words, pad included (written over a 0xFF poison, so gaps show).
 */
export async function convertOnGpu(
  device: GPUDevice,
  input: Uint8Array,
  count: number,
  from: FloatDtype,
  to: FloatDtype,
): Promise<Uint8Array> {
  const scheduler = new Scheduler(device, 'Convert');
  const kernel = await createConvertKernel(device, from, to);
  const outBytes = pad4(count * (dtypeBits(to) / 8));
  const make = (label: string, size: number, usage: number): GPUBuffer =>
    device.createBuffer({ label: `Convert.${label}`, size: Math.max(4, pad4(size)), usage });
  const buffers = [
    make('params', PARAMS_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST),
    make('inputs', input.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST),
    make('output', outBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST),
    make('readback', outBytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST),
  ] as const;
  const [params, inputs, output, readback] = buffers;
  try {
    const d = splitDispatch(mergeGroups(count), device.limits.maxComputeWorkgroupsPerDimension);
    const padded = new Uint8Array(pad4(input.byteLength));
    padded.set(input);
    scheduler.write(inputs, 0, padded);
    scheduler.write(output, 0, new Uint8Array(outBytes).fill(0xff));
    scheduler.write(
      params,
      0,
      encodeParams({ count, slotWords: padded.byteLength / 4, start: 0, groupsX: d.x, groups: d.groups }),
    );
    scheduler.submit('convert', (encoder) => {
      kernel.encode(encoder, { params, inputs, output }, d);
      encoder.copyBufferToBuffer(output, 0, readback, 0, outBytes);
    });
    return await scheduler.read(readback, outBytes);
  } finally {
    for (const buffer of buffers) buffer.destroy();
    kernel.destroy();
    scheduler.destroy();
  }
}

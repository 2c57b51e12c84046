// Whether a device's own f32 division is correctly rounded. WGSL allows 2.5 ulp, and a real GPU takes
// it (an H200 through NVIDIA's Vulkan driver: the mergekit parity test's linear merge, which divides
// by Σw = 1.8, differed in 1,032 elements). Where the device divides exactly (SwiftShader, whose
// division is the CPU's), the merge kernels skip shaders/common/quotient.wgsl's correction, which
// costs SwiftShader up to half a RAM merge; everywhere else they correct every quotient. The probe
// divides pairs of random normal floats (and merge-like divisors) on the device and compares each
// quotient with JavaScript's, rounded to f32; it runs once per device.
import { f32Bits, f32FromBits } from '../../methods/float32.ts';
import { seededRandom } from '../../methods/rng.ts';

/** Pairs the probe divides: enough that a division through a reciprocal cannot pass by luck. */
export const PROBE_PAIRS = 1 << 16;

const PROBE_KERNEL = /* wgsl */ `
@group(0) @binding(0) var<storage, read> cases: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec2<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let i = id.y * 65535u * 64u + id.x;
  if (i >= arrayLength(&cases)) {
    return;
  }
  let a = bitcast<f32>(cases[i].x);
  let b = bitcast<f32>(cases[i].y);
  out[i] = vec2<u32>(bitcast<u32>(a / b), quotient_of(cases[i]));
}`;

/**
 * Runs `source` (which must define `fn quotient_of(c: vec4<u32>) -> u32`) over cases of four words
 * each; returns per case the device's own a / b (words 0 and 1 as f32) and quotient_of's result.
 */
export async function runQuotientKernel(
  device: GPUDevice,
  source: string,
  cases: Uint32Array,
): Promise<Uint32Array> {
  const n = cases.length / 4;
  const module = device.createShaderModule({
    label: 'MergeStudio.quotient',
    code: `${source}\n${PROBE_KERNEL}`,
  });
  const pipeline = await device.createComputePipelineAsync({
    label: 'MergeStudio.quotient',
    layout: 'auto',
    compute: { module, entryPoint: 'main' },
  });
  const buffer = (label: string, size: number, usage: number): GPUBuffer =>
    device.createBuffer({ label: `MergeStudio.quotient.${label}`, size, usage });
  const input = buffer('cases', cases.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
  const output = buffer(
    'out',
    n * 8,
    GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
  );
  const readback = buffer('readback', n * 8, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
  try {
    device.queue.writeBuffer(input, 0, cases);
    // Poisoned, so that a case the kernel did not write shows.
    device.queue.writeBuffer(output, 0, new Uint32Array(n * 2).fill(0xdeadbeef));
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(
      0,
      device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: input } },
          { binding: 1, resource: { buffer: output } },
        ],
      }),
    );
    const groups = Math.ceil(n / 64);
    pass.dispatchWorkgroups(Math.min(groups, 65535), Math.ceil(groups / 65535));
    pass.end();
    encoder.copyBufferToBuffer(output, 0, readback, 0, n * 8);
    device.queue.submit([encoder.finish()]);
    await readback.mapAsync(GPUMapMode.READ);
    return new Uint32Array(readback.getMappedRange().slice(0));
  } finally {
    input.destroy();
    output.destroy();
    readback.destroy();
  }
}

/** Random normal floats whose quotients are normal, and the divisors merges use (Σw, agent counts). */
function probeCases(): Uint32Array {
  const random = seededRandom(0x51f15eed);
  const cases = new Uint32Array(PROBE_PAIRS * 4);
  const normal = (e: number): number => ((((random() * 2 ** 32) >>> 0) & 0x807fffff) | (e << 23)) >>> 0;
  const divisors = [1.8, 3, 5, 6, 7, 0.3 + 0.5 + 1, 2.6].map((d) => f32Bits(Math.fround(d)));
  for (let i = 0; i < PROBE_PAIRS; i++) {
    // Over the whole normal range (a divisor above 2^126 has a subnormal reciprocal, which a GPU may
    // flush: an H200 did), with quotients that stay normal.
    const e = 8 + Math.floor(random() * 239);
    const b =
      i % 4 === 0
        ? divisors[(i >> 2) % divisors.length]!
        : normal(Math.min(254, Math.max(1, e + Math.floor(random() * 121) - 60)));
    cases.set([normal(e), b, 0, 0], i * 4);
  }
  return cases;
}

const probes = new WeakMap<GPUDevice, Promise<boolean>>();

/** Whether every probe quotient of this device equals the correctly rounded one; false if the probe fails. */
export function divisionIsExact(device: GPUDevice): Promise<boolean> {
  let probe = probes.get(device);
  if (!probe) {
    probe = (async () => {
      const cases = probeCases();
      const got = await runQuotientKernel(
        device,
        'fn quotient_of(c: vec4<u32>) -> u32 { return 0u; }',
        cases,
      );
      for (let i = 0; i < PROBE_PAIRS; i++) {
        const want = f32Bits(Math.fround(f32FromBits(cases[i * 4]!) / f32FromBits(cases[i * 4 + 1]!)));
        if (got[2 * i] !== want) return false;
      }
      return true;
    })().catch(() => false);
    probes.set(device, probe);
  }
  return probe;
}

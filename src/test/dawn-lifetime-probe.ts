// Child process for the dawn.node lifetime test: gets a device, drops every local reference to the
// instance, forces garbage collection, runs a hot loop (TurboFan), then checks 4 compute rounds.
// `retain`: through acquireNodeGpu (which holds the instance); `drop`: raw create(), held by nothing.
import { acquireNodeGpu } from '../cli/node-gpu.ts';

const mode = process.argv[2];
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

async function device(): Promise<GPUDevice> {
  const node = await acquireNodeGpu();
  if (mode === 'retain') return node.adapter.requestDevice();
  node.release();
  return node.adapter.requestDevice();
}

const dev = await device();
gc();
await new Promise((resolve) => setTimeout(resolve, 20));
gc();

const n = 1 << 18;
const host = new Uint32Array(n);
for (let i = 0; i < n; i++) host[i] = 0x3f80 + (i & 0xff);

const module = dev.createShaderModule({
  label: 'LifetimeProbe.shader',
  code: `@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {
  if (id.x < arrayLength(&data)) { data[id.x] = data[id.x] * 3u + 1u; }
}`,
});
const layout = dev.createBindGroupLayout({
  label: 'LifetimeProbe.layout',
  entries: [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage' } }],
});
const pipeline = dev.createComputePipeline({
  label: 'LifetimeProbe.pipeline',
  layout: dev.createPipelineLayout({ bindGroupLayouts: [layout] }),
  compute: { module, entryPoint: 'main' },
});
const data = dev.createBuffer({
  label: 'LifetimeProbe.data',
  size: n * 4,
  usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
});
const readback = dev.createBuffer({
  label: 'LifetimeProbe.readback',
  size: n * 4,
  usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
});
const group = dev.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: data } }] });
for (let round = 0; round < 4; round++) {
  dev.queue.writeBuffer(data, 0, host);
  const encoder = dev.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(n / 64);
  pass.end();
  encoder.copyBufferToBuffer(data, 0, readback, 0, n * 4);
  dev.queue.submit([encoder.finish()]);
  await readback.mapAsync(GPUMapMode.READ);
  const got = new Uint32Array(readback.getMappedRange().slice(0));
  readback.unmap();
  for (let i = 0; i < n; i += 997)
    if (got[i] !== (host[i]! * 3 + 1) >>> 0) throw new Error(`round ${round}, element ${i}: ${got[i]}`);
  gc();
}
data.destroy();
readback.destroy();
dev.destroy();
process.stdout.write('ok\n');
process.exit(0);

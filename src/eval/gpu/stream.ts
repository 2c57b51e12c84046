// The ordered command stream of the GPU eval backend. The EvalBackend's ops return at once, but a
// pipeline is built asynchronously (KernelCache), so each op is queued as a step: steps run one after
// the other, each encoding its dispatches into the open command encoder, which is submitted every
// SUBMIT_EVERY passes and whenever a result is read. Only reads and flush() wait for the GPU.
//
// Buffers: activations come from a pool of released buffers of the same size (a buffer is handed out
// again only by a later step, so the GPU, which runs one queue in order, has finished reading the old
// contents first); transients (uniforms not cached, tables, staging) are destroyed right after the
// submit that uses them, which WebGPU allows (the memory goes when the work is done). Every buffer
// the stream creates is tracked, so destroy() leaves none alive.

import { KernelCache } from '../../engine/gpu/kernel-cache.ts';
import type { KernelIo, KernelRequest } from '../../engine/gpu/kernels/kernel.ts';
import { pad4, type Dispatch } from '../../engine/gpu/plumbing.ts';

/** Passes encoded before a submit: enough to amortise it, few enough that the GPU starts early. */
const SUBMIT_EVERY = 32;
/** Uniform buffers kept by content (the same shapes come back every layer). */
const UNIFORM_CACHE = 256;

/** A field of a uniform block: a u32 or an f32 (the WGSL struct's order). */
export type UniformField = number | { f32: number };

export class GpuStream {
  private readonly cache: KernelCache;
  private tail: Promise<void> = Promise.resolve();
  private failure: unknown;
  private destroyed = false;
  private encoder: GPUCommandEncoder | null = null;
  private passes = 0;
  /** Destroyed after the next submit (they may be used by the open encoder). */
  private afterSubmit: GPUBuffer[] = [];
  private readonly live = new Set<GPUBuffer>();
  private readonly pool = new Map<number, GPUBuffer[]>();
  private pooledBytes = 0;
  private readonly uniforms = new Map<string, GPUBuffer>();

  constructor(
    readonly device: GPUDevice,
    /** Bytes of released activation buffers kept for reuse; beyond it they are destroyed. */
    private readonly poolBytes: number,
  ) {
    this.cache = new KernelCache(device);
  }

  /** Queues a step after every step queued before; a failed step fails every later read and flush. */
  enqueue(step: () => void | Promise<void>): void {
    this.tail = this.tail.then(async () => {
      if (this.failure !== undefined || this.destroyed) return;
      try {
        await step();
      } catch (error) {
        this.failure = error;
      }
    });
  }

  /** Waits for the queued steps; rethrows the first failure (the backend is unusable after one). */
  async settle(): Promise<void> {
    await this.tail;
    if (this.destroyed) throw new Error('gpu eval backend: used after destroy()');
    if (this.failure !== undefined) throw this.failure;
  }

  /** Encodes one dispatch of a pipeline (inside a step). */
  async dispatch(request: KernelRequest, io: KernelIo, dispatch: Dispatch): Promise<void> {
    const kernel = await this.cache.get(request);
    if (this.destroyed) return;
    this.encoder ??= this.device.createCommandEncoder({ label: 'eval.encoder' });
    kernel.encode(this.encoder, io, dispatch);
    if (++this.passes >= SUBMIT_EVERY) this.submit();
  }

  /** Copies (inside a step) in the same order as the dispatches. */
  copy(source: GPUBuffer, target: GPUBuffer, bytes: number): void {
    this.encoder ??= this.device.createCommandEncoder({ label: 'eval.encoder' });
    this.encoder.copyBufferToBuffer(source, 0, target, 0, bytes);
  }

  submit(): void {
    if (this.encoder) this.device.queue.submit([this.encoder.finish()]);
    this.encoder = null;
    this.passes = 0;
    for (const buffer of this.afterSubmit) this.destroyBuffer(buffer);
    this.afterSubmit = [];
  }

  /** A new buffer holding `bytes` (padded to 4), tracked; usage STORAGE unless given. */
  upload(label: string, bytes: Uint8Array, usage: number = GPUBufferUsage.STORAGE): GPUBuffer {
    const buffer = this.create(label, Math.max(4, pad4(bytes.byteLength)), usage, true);
    new Uint8Array(buffer.getMappedRange()).set(bytes);
    buffer.unmap();
    return buffer;
  }

  /** A uniform block of u32 / f32 fields, shared by every dispatch with the same values. */
  uniform(fields: readonly UniformField[]): GPUBuffer {
    const bytes = new Uint8Array(Math.ceil((fields.length * 4) / 16) * 16);
    const view = new DataView(bytes.buffer);
    fields.forEach((field, i) => {
      if (typeof field === 'number') {
        if (!Number.isInteger(field) || field < 0 || field > 0xffffffff)
          throw new RangeError(`uniform field ${i}: ${field} is not a u32`);
        view.setUint32(i * 4, field, true);
      } else view.setFloat32(i * 4, field.f32, true);
    });
    const key = Array.from(new Uint32Array(bytes.buffer), (w) => w.toString(16)).join(',');
    const cached = this.uniforms.get(key);
    if (cached) {
      // Most recently used last: the first key is the one to evict.
      this.uniforms.delete(key);
      this.uniforms.set(key, cached);
      return cached;
    }
    const buffer = this.upload('eval.params', bytes, GPUBufferUsage.UNIFORM);
    this.uniforms.set(key, buffer);
    if (this.uniforms.size > UNIFORM_CACHE) {
      const [oldest, evicted] = this.uniforms.entries().next().value as [string, GPUBuffer];
      this.uniforms.delete(oldest);
      this.afterSubmit.push(evicted);
    }
    return buffer;
  }

  /** A buffer destroyed after the next submit (per-op tables, indices). */
  transient(buffer: GPUBuffer): void {
    this.afterSubmit.push(buffer);
  }

  /** An activation buffer of `bytes` (inside a step): a released one of that size, or a new one. */
  alloc(bytes: number, label: string): GPUBuffer {
    const size = Math.max(4, pad4(bytes));
    const free = this.pool.get(size);
    const reused = free?.pop();
    if (reused) {
      this.pooledBytes -= size;
      return reused;
    }
    return this.create(label, size, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, false);
  }

  /** Returns an activation buffer (inside a step): pooled while the pool has room. */
  recycle(buffer: GPUBuffer): void {
    if (this.pooledBytes + buffer.size > this.poolBytes) {
      this.afterSubmit.push(buffer);
      return;
    }
    const free = this.pool.get(buffer.size) ?? [];
    free.push(buffer);
    this.pool.set(buffer.size, free);
    this.pooledBytes += buffer.size;
  }

  /** Destroys a buffer after the work using it (inside a step). */
  discard(buffer: GPUBuffer): void {
    this.afterSubmit.push(buffer);
  }

  /**
   * The bytes of `source` (queues the copy as a step, so it sees every op queued before), after the
   * GPU has finished them.
   */
  async read(source: () => GPUBuffer, bytes: number): Promise<ArrayBuffer> {
    const size = Math.max(4, pad4(bytes));
    let staging: GPUBuffer | undefined;
    this.enqueue(() => {
      staging = this.create('eval.staging', size, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, false);
      this.copy(source(), staging, size);
      this.submit();
    });
    await this.settle();
    if (!staging) throw new Error('gpu eval backend: the read was not queued');
    try {
      await staging.mapAsync(GPUMapMode.READ);
      return staging.getMappedRange(0, size).slice(0, bytes);
    } finally {
      this.destroyBuffer(staging);
    }
  }

  /** Waits until every queued step is submitted and the GPU has finished it. */
  async flush(): Promise<void> {
    this.enqueue(() => this.submit());
    await this.settle();
    await this.device.queue.onSubmittedWorkDone();
  }

  /** Every buffer created and not yet destroyed (pooled, cached, live activations and weights). */
  get liveBuffers(): number {
    return this.live.size;
  }

  destroy(): void {
    this.destroyed = true;
    this.encoder = null;
    for (const buffer of this.live) buffer.destroy();
    this.live.clear();
    this.pool.clear();
    this.uniforms.clear();
    this.afterSubmit = [];
    this.cache.destroy();
  }

  private create(label: string, size: number, usage: number, mapped: boolean): GPUBuffer {
    if (this.destroyed) throw new Error('gpu eval backend: used after destroy()');
    const buffer = this.device.createBuffer({ label, size, usage, mappedAtCreation: mapped });
    this.live.add(buffer);
    return buffer;
  }

  private destroyBuffer(buffer: GPUBuffer): void {
    if (this.live.delete(buffer)) buffer.destroy();
  }
}

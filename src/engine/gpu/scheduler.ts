// The only code that touches the GPU queue: uploads, submits and read-backs, each failing with the
// device's GpuDeviceError once the device is lost or reports an error, instead of hanging.

import { GpuDeviceError, watchDevice } from './device.ts';
import type { StageTimings } from '../contract.ts';

const noop = (): void => undefined;

/** The most one writeBuffer call carries (Scheduler.write). */
export const WRITE_PIECE = 1 << 20;

/** A mapped read-back (Scheduler.readMapped): `bytes` stay readable until release(), then are detached. */
export interface MappedRead {
  readonly bytes: Uint8Array;
  release(): void;
}

export class Scheduler {
  readonly timings: StageTimings = { upload: 0, compute: 0, readback: 0 };
  private failure: GpuDeviceError | null = null;
  private readonly failed: Promise<never>;
  private readonly unwatch: () => void;

  constructor(
    private readonly device: GPUDevice,
    private readonly label: string,
  ) {
    let reject: (error: GpuDeviceError) => void = noop;
    this.failed = new Promise<never>((_, r) => (reject = r));
    this.failed.catch(noop);
    this.unwatch = watchDevice(device, (error) => {
      this.failure ??= error;
      reject(this.failure);
    });
  }

  /** Throws the device's failure, if any. */
  check(): void {
    if (this.failure) throw this.failure;
  }

  /**
   * Writes `size` bytes of `data` at `offset`, in pieces of at most WRITE_PIECE bytes: Chromium's
   * WebGPU client serializes a larger write into a new heap buffer before its transfer buffer, and
   * Dawn stages a write larger than its ring buffer in a new buffer of its own, fresh memory each time.
   */
  write(buffer: GPUBuffer, offset: number, data: Uint8Array, size = data.byteLength): void {
    this.check();
    const started = performance.now();
    for (let done = 0; done < size; done += WRITE_PIECE)
      this.device.queue.writeBuffer(
        buffer,
        offset + done,
        data.buffer,
        data.byteOffset + done,
        Math.min(WRITE_PIECE, size - done),
      );
    this.timings.upload += performance.now() - started;
  }

  submit(label: string, build: (encoder: GPUCommandEncoder) => void): void {
    this.check();
    const encoder = this.device.createCommandEncoder({ label: `${this.label}.${label}` });
    build(encoder);
    this.device.queue.submit([encoder.finish({ label: `${this.label}.${label}.commands` })]);
  }

  /** Maps a MAP_READ buffer after the work submitted so far and copies its first `bytes` out. */
  async read(buffer: GPUBuffer, bytes: number): Promise<Uint8Array> {
    const mapped = await this.readMapped(buffer, bytes);
    try {
      return mapped.bytes.slice();
    } finally {
      mapped.release();
    }
  }

  /**
   * Maps a MAP_READ buffer after the work submitted so far: its first `bytes`, readable in place
   * until release() unmaps it (a merge's output goes to the file system from there: a copy into new
   * memory cost the studio's worker 1.9 s per 0.33 GiB of output on the CI VM, in page faults). The
   * buffer must not be used again before release().
   */
  async readMapped(buffer: GPUBuffer, bytes: number): Promise<MappedRead> {
    const started = performance.now();
    await this.map(buffer, GPUMapMode.READ, bytes);
    const mapped = performance.now();
    this.timings.compute += mapped - started;
    let view: Uint8Array;
    try {
      view = new Uint8Array(buffer.getMappedRange(0, bytes));
    } catch (error) {
      buffer.unmap();
      throw error;
    }
    this.timings.readback += performance.now() - mapped;
    let released = false;
    return {
      bytes: view,
      release: () => {
        if (released) return;
        released = true;
        const unmapping = performance.now();
        buffer.unmap();
        this.timings.readback += performance.now() - unmapping;
      },
    };
  }

  /**
   * Maps a MAP_WRITE buffer once the work submitted so far is done with it. Its time is not counted:
   * it is asked for ahead, and upload() counts the wait for it.
   */
  mapForWrite(buffer: GPUBuffer): Promise<void> {
    return this.map(buffer, GPUMapMode.WRITE, buffer.size);
  }

  /**
   * The first `bytes` (a multiple of 4) of a buffer mapForWrite mapped. A buffer of a
   * device lost since (its mapping gone with it) fails with the device's GpuDeviceError, or an
   * internal one until the loss is reported, never with the bare DOMException.
   */
  mappedRange(buffer: GPUBuffer, bytes: number): Uint8Array {
    this.check();
    try {
      return new Uint8Array(buffer.getMappedRange(0, bytes));
    } catch (error) {
      if (this.failure) throw this.failure;
      throw new GpuDeviceError('internal', `${buffer.label} is not mapped: ${(error as Error).message}`);
    }
  }

  /** mapAsync, failing with the device's GpuDeviceError once it is lost or reports an error. */
  private async map(buffer: GPUBuffer, mode: GPUMapModeFlags, bytes: number): Promise<void> {
    this.check();
    try {
      await Promise.race([buffer.mapAsync(mode, 0, bytes), this.failed]);
    } catch (error) {
      // mapAsync rejects with a DOMException named AbortError on loss: never let it pass for a cancel.
      if (this.failure) throw this.failure;
      if (error instanceof GpuDeviceError) throw error;
      throw new GpuDeviceError('internal', `mapping ${buffer.label} failed: ${(error as Error).message}`);
    }
  }

  /** Resolves when the queue has finished everything submitted (or rejects on device failure). */
  async idle(): Promise<void> {
    this.check();
    await Promise.race([this.device.queue.onSubmittedWorkDone(), this.failed]);
  }

  /** Adds the wall time of reading inputs (the tensor's read callbacks) to the upload stage. */
  addUploadTime(ms: number): void {
    this.timings.upload += ms;
  }

  destroy(): void {
    this.unwatch();
  }
}

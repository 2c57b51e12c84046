// Buffers a method's passes need beside the buffer sets (a sort's scratch, per-element factors), by
// name: grown to the largest size asked for so far, never shrunk, destroyed with their engine.
import { engineBuffer } from './buffer-sets.ts';

export class ScratchBuffers {
  private readonly buffers = new Map<string, GPUBuffer>();

  constructor(private readonly device: GPUDevice) {}

  /**
   * The buffer named `name` with at least `bytes` bytes and this `usage`: the one made before where it
   * is large enough, else a new one (the old one destroyed: what it held is gone).
   */
  ensure(name: string, bytes: number, usage: GPUBufferUsageFlags): GPUBuffer {
    const now = this.buffers.get(name);
    if (now && now.size >= bytes && now.usage === usage) return now;
    now?.destroy();
    const buffer = engineBuffer(this.device, name, Math.max(bytes, now?.size ?? 0), usage);
    this.buffers.set(name, buffer);
    return buffer;
  }

  destroy(): void {
    for (const buffer of this.buffers.values()) buffer.destroy();
    this.buffers.clear();
  }
}

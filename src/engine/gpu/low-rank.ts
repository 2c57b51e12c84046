// The low-rank product of a LoRA agent's τ rows on the GPU (kernels/low_rank.ts), for the driver's
// adapter agents (src/driver/adapter-model.ts): left [rows, rank] · right [cols, rank]ᵀ in f32, in
// chunks of rows whose output fits one binding, each read back before the next. Not serialized
// behind the engine's calls: it runs inside a merge's window reads, and goes through the scheduler.

import { checkLowRankJob, type LowRankJob } from '../../methods/lora.ts';
import type { KernelCache } from './kernel-cache.ts';
import {
  LOW_RANK_REQUEST,
  LOW_RANK_TILE_COLS,
  LOW_RANK_TILE_ROWS,
  lowRankParams,
} from './kernels/low_rank.ts';
import type { Scheduler } from './scheduler.ts';

/** Output bytes per dispatch at most (a window of 2^22 f32 values). */
const CHUNK_BYTES = 16 << 20;

const pad4 = (n: number): number => Math.max(4, Math.ceil(n / 4) * 4);

export class LowRankRunner {
  constructor(
    private readonly device: GPUDevice,
    private readonly scheduler: Scheduler,
    private readonly kernels: KernelCache,
    /** Output bytes per dispatch at most (tests make it small to run several chunks). */
    private readonly chunkBytes = CHUNK_BYTES,
  ) {}

  async run(job: LowRankJob): Promise<Float32Array> {
    checkLowRankJob(job);
    const { left, right, rows, cols, rank } = job;
    const out = new Float32Array(rows * cols);
    if (rows === 0 || cols === 0 || rank === 0) return out;
    const limits = this.device.limits;
    const maxGroups = limits.maxComputeWorkgroupsPerDimension;
    const binding = Math.min(limits.maxStorageBufferBindingSize, this.chunkBytes);
    const tilesCols = Math.ceil(cols / LOW_RANK_TILE_COLS);
    if (tilesCols > maxGroups || cols * rank * 4 > limits.maxStorageBufferBindingSize)
      throw new RangeError(`low-rank product: ${cols} columns of rank ${rank} exceed one dispatch`);
    const chunkRows = Math.max(
      1,
      Math.min(
        rows,
        maxGroups * LOW_RANK_TILE_ROWS,
        Math.floor(binding / (cols * 4)),
        Math.floor(binding / (rank * 4)),
      ),
    );
    const kernel = await this.kernels.get(LOW_RANK_REQUEST);
    const buffers: GPUBuffer[] = [];
    const buffer = (name: string, size: number, usage: GPUBufferUsageFlags): GPUBuffer => {
      const made = this.device.createBuffer({
        label: `MergeEngine.lowRank.${name}`,
        size: pad4(size),
        usage,
      });
      buffers.push(made);
      return made;
    };
    const storage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    try {
      const weight = buffer('right', right.byteLength, storage);
      this.scheduler.write(weight, 0, bytesOf(right));
      const bias = buffer('noBias', 4, storage);
      const x = buffer('left', chunkRows * rank * 4, storage);
      const result = buffer('out', chunkRows * cols * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
      const readback = buffer(
        'readback',
        chunkRows * cols * 4,
        GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      );
      const params = buffer('params', 32, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
      const io = { params, x, weight, bias, out: result };
      for (let start = 0; start < rows; start += chunkRows) {
        const count = Math.min(chunkRows, rows - start);
        const bytes = count * cols * 4;
        this.scheduler.write(params, 0, bytesOf(lowRankParams(count, cols, rank)));
        this.scheduler.write(x, 0, bytesOf(left.subarray(start * rank, (start + count) * rank)));
        const tilesRows = Math.ceil(count / LOW_RANK_TILE_ROWS);
        this.scheduler.submit('lowRank', (encoder) => {
          kernel.encode(encoder, io, { x: tilesCols, y: tilesRows, groups: tilesCols * tilesRows });
          encoder.copyBufferToBuffer(result, 0, readback, 0, pad4(bytes));
        });
        const got = await this.scheduler.read(readback, pad4(bytes));
        out.set(new Float32Array(got.buffer, got.byteOffset, count * cols), start * cols);
      }
      return out;
    } finally {
      for (const b of buffers) b.destroy();
    }
  }
}

function bytesOf(values: Float32Array | Uint32Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

// The GPU low-rank product (the eval linear shader over F32 factors) against the f64 reference on
// fresh random shapes: odd sizes, rank 1, rank 64, tiles cut at every edge, several chunks of rows,
// and through the engine's `product`. Each value within f32 summation rounding of the reference:
// |gpu − ref| ≤ (rank + 1)·2⁻²⁴·Σ_k |left·right|.
import { afterAll, describe, expect, it } from 'vitest';
import { lowRankReference, type LowRankJob } from '../../methods/lora.ts';
import { seededRandom } from '../../methods/rng.ts';
import { openGpuHarness } from '../../test/gpu-harness.ts';
import { createGpuEngine } from './gpu-engine.ts';
import { KernelCache } from './kernel-cache.ts';
import { LowRankRunner } from './low-rank.ts';
import { Scheduler } from './scheduler.ts';

const { harness } = await openGpuHarness();
afterAll(() => harness?.close());

function randomJob(seed: number, rows: number, cols: number, rank: number): LowRankJob {
  const random = seededRandom(seed);
  const values = (n: number) =>
    Float32Array.from({ length: n }, () => (random() - 0.5) * 2 ** Math.floor(random() * 6 - 3));
  return { left: values(rows * rank), right: values(cols * rank), rows, cols, rank };
}

/** Elements outside the bound, as "i: got vs want (bound)". */
function offBound(job: LowRankJob, got: Float32Array): string[] {
  const want = lowRankReference(job);
  const bad: string[] = [];
  for (let i = 0; i < job.rows; i++)
    for (let j = 0; j < job.cols; j++) {
      let magnitude = 0;
      for (let k = 0; k < job.rank; k++)
        magnitude += Math.abs((job.left[i * job.rank + k] ?? 0) * (job.right[j * job.rank + k] ?? 0));
      const e = i * job.cols + j;
      const bound = (job.rank + 1) * 2 ** -24 * magnitude;
      if (!(Math.abs((got[e] ?? NaN) - (want[e] ?? 0)) <= bound) && bad.length < 5)
        bad.push(`${e}: ${got[e]} vs ${want[e]} (${bound})`);
    }
  return bad;
}

const SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [33, 65, 1],
  [31, 63, 64],
  [7, 130, 5],
  [97, 3, 64],
  [64, 64, 16],
  [5, 1, 3],
];

describe.skipIf(!harness)('the GPU low-rank product', () => {
  it.each(SHAPES)('%i × %i at rank %i equals the f64 reference to f32 rounding', async (rows, cols, rank) => {
    const device = harness!.device;
    const scheduler = new Scheduler(device, 'LowRankTest');
    const kernels = new KernelCache(device);
    try {
      // 600-byte chunks: several dispatches of rows for all but the smallest shapes.
      const runner = new LowRankRunner(device, scheduler, kernels, 600);
      const job = randomJob(rows * 1000 + cols * 7 + rank, rows, cols, rank);
      const got = await harness!.run(() => runner.run(job));
      expect(got).toHaveLength(rows * cols);
      expect(offBound(job, got)).toEqual([]);
    } finally {
      kernels.destroy();
      scheduler.destroy();
    }
    expect(harness!.liveBuffers()).toEqual([]);
  });

  it('is the engine’s product, and gives zeros for rank 0 without a dispatch', async () => {
    const engine = createGpuEngine(harness!.device, {
      agents: 1,
      adapterDescription: harness!.adapterDescription,
    });
    try {
      const job = randomJob(9, 45, 77, 8);
      const got = await harness!.run(() => engine.product!(job));
      expect(offBound(job, got)).toEqual([]);
      const empty = await engine.product!({
        left: new Float32Array(0),
        right: new Float32Array(0),
        rows: 3,
        cols: 2,
        rank: 0,
      });
      expect([...empty]).toEqual([0, 0, 0, 0, 0, 0]);
      await expect(engine.product!({ ...job, rows: 46 })).rejects.toThrow(/left holds 360 values for 46×8/);
    } finally {
      engine.destroy();
    }
    expect(harness!.liveBuffers()).toEqual([]);
  });
});

// The counting pass before a tensor-local RAM+ merge (shaders/overlap_count.wgsl): per agent its changed
// and unique elements and the non-finite ones, checked against the CPU reference statistics on fresh
// seeded inputs with NaN / ±Inf written in, over windows of several workgroups laid out as 2D
// dispatches, odd element counts, agents written out (N ≤ 8) and looped, and every agent-field layout
// (N ≤ 4 in one word, up to 16 and 32 in vectors). The input buffer starts as random bytes, so padding
// and stale words must not count.
import { afterAll, describe, expect, it } from 'vitest';
import { dtypeBits, type FloatDtype } from '../../format/dtype.ts';
import { at, must } from '../../io/checked.ts';
import { injectNonFinite } from '../../test/nonfinite-tensors.ts';
import { referenceStats } from '../../methods/reference.ts';
import { randomTensor, type TestTensor } from '../../test/tensors.ts';
import { seededRandom } from '../../methods/rng.ts';
import { tensorInput } from '../../methods/tensors.ts';
import { openGpuHarness, type GpuHarness } from '../../test/gpu-harness.ts';
import {
  addOverlapCounters,
  createOverlapCountKernel,
  emptyOverlapCounts,
  overlapCountGroups,
  overlapCountWords,
  type OverlapCounts,
} from './kernels/overlap_count.ts';
import { encodeParams, PARAMS_BYTES } from './layout.ts';
import { pad4, splitDispatch } from './plumbing.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

interface Case {
  dtype: FloatDtype;
  agents: number;
  numel: number;
  window: number;
  /** Workgroups per dispatch dimension: small, so windows of several workgroups run as 2D dispatches. */
  perDimension: number;
  /** NaN / ±Inf elements whose bits differ, and elements every model holds as the same special. */
  differ: number;
  kept: number;
}

const CASES: Case[] = [
  { dtype: 'F32', agents: 1, numel: 1_001, window: 333, perDimension: 1, differ: 1, kept: 1 },
  { dtype: 'F16', agents: 2, numel: 65_537, window: 20_001, perDimension: 1, differ: 9, kept: 4 },
  { dtype: 'BF16', agents: 3, numel: 300_001, window: 140_001, perDimension: 2, differ: 17, kept: 5 },
  { dtype: 'BF16', agents: 5, numel: 65_535, window: 65_535, perDimension: 65_535, differ: 7, kept: 3 },
  { dtype: 'F16', agents: 8, numel: 20_001, window: 20_001, perDimension: 65_535, differ: 5, kept: 2 },
  { dtype: 'F32', agents: 9, numel: 40_001, window: 13_333, perDimension: 65_535, differ: 5, kept: 2 },
  { dtype: 'F16', agents: 20, numel: 3_001, window: 1_000, perDimension: 65_535, differ: 3, kept: 1 },
  { dtype: 'BF16', agents: 32, numel: 8_001, window: 8_001, perDimension: 65_535, differ: 3, kept: 1 },
];

/** A copy of `t` where, at a share of the elements, one agent keeps its change and the rest hold the base. */
function isolate(t: TestTensor, share: number, seed: number): TestTensor {
  const random = seededRandom(seed);
  const size = dtypeBits(t.values.dtype) / 8;
  const bytes = t.bytes.map((b) => b.slice());
  const agents = t.values.agents.map((a) => a.slice());
  const base = t.values.base;
  for (let i = 0; i < base.length; i++) {
    if (random() >= share) continue;
    const alone = Math.floor(random() * agents.length);
    agents.forEach((a, u) => {
      if (u === alone) return;
      a[i] = at(base, i, 'base');
      at(bytes, u + 1, 'agent').set(at(bytes, 0, 'base').subarray(i * size, (i + 1) * size), i * size);
    });
  }
  return { values: { ...t.values, agents }, bytes, input: tensorInput(t.values.name, t.values.dtype, bytes) };
}

/** Runs the kernel over `bytes` (input k = model k) window by window and adds up its counters. */
async function countOnGpu(h: GpuHarness, c: Case, bytes: readonly Uint8Array[], epsilon: number) {
  const { device } = h;
  const size = dtypeBits(c.dtype) / 8;
  const kernel = await createOverlapCountKernel(device, c.dtype, c.agents);
  const slotBytes = pad4(c.window * size) + 8;
  const words = overlapCountWords(c.agents);
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const inputs = device.createBuffer({ label: 'test.inputs', size: slotBytes * (c.agents + 1), usage });
  const counters = device.createBuffer({ label: 'test.counters', size: words * 4, usage });
  const params = device.createBuffer({
    label: 'test.params',
    size: PARAMS_BYTES,
    usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
  });
  const readback = device.createBuffer({
    label: 'test.readback',
    size: words * 4,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  const random = seededRandom(c.numel);
  const garbage = Uint8Array.from({ length: slotBytes * (c.agents + 1) }, () => Math.floor(random() * 256));
  device.queue.writeBuffer(inputs, 0, garbage);
  const counts = emptyOverlapCounts(c.agents);
  try {
    for (let start = 0; start < c.numel; start += c.window) {
      const count = Math.min(c.window, c.numel - start);
      bytes.forEach((b, k) => {
        const used = b.subarray(start * size, (start + count) * size);
        // The pad bytes up to the word keep the garbage of the previous window or the fill.
        const word = garbage.slice(k * slotBytes, k * slotBytes + pad4(used.byteLength));
        word.set(used);
        device.queue.writeBuffer(inputs, k * slotBytes, word);
      });
      const d = splitDispatch(overlapCountGroups(count), c.perDimension);
      const p = { count, slotWords: slotBytes / 4, start, groupsX: d.x, groups: d.groups, epsilon };
      device.queue.writeBuffer(params, 0, encodeParams(p));
      const encoder = device.createCommandEncoder({ label: 'test.encoder' });
      encoder.clearBuffer(counters);
      kernel.encode(encoder, { params, inputs, counters }, d);
      encoder.copyBufferToBuffer(counters, 0, readback, 0, words * 4);
      device.queue.submit([encoder.finish()]);
      await readback.mapAsync(GPUMapMode.READ);
      addOverlapCounters(counts, new Uint32Array(readback.getMappedRange().slice(0)));
      readback.unmap();
    }
  } finally {
    for (const b of [inputs, counters, params, readback]) b.destroy();
    kernel.destroy();
  }
  return counts;
}

describe.skipIf(!harness)(`GPU overlap counts for tensor-local RAM+ ${opened.skip ?? ''}`, () => {
  it.each(CASES)(
    '$dtype, N=$agents, $numel elements in windows of $window',
    async (c) => {
      const h = must(harness, 'the GPU harness');
      const random = randomTensor({ name: `oc.${c.agents}`, ...c, seed: 300 + c.agents });
      const t = injectNonFinite(isolate(random, 0.3, c.agents), {
        differ: c.differ,
        kept: c.kept,
        models: Array.from({ length: c.agents + 1 }, (_, m) => m),
        seed: 7 + c.agents,
      });
      for (const epsilon of [1e-5, 0]) {
        const want = referenceStats(t.values, epsilon);
        // Fresh inputs that exercise every counter: each agent changes elements, some of them alone.
        expect(want.changed.every((n) => n > 0)).toBe(true);
        expect(want.unique.every((n) => n > 0)).toBe(true);
        expect(want.nonFinite).toBe(c.differ);
        const got: OverlapCounts = await h.run(() => countOnGpu(h, c, t.bytes, epsilon));
        expect(got).toEqual({
          changed: want.changed,
          unique: want.unique,
          nonFinite: want.nonFinite,
          nonFiniteModels: want.nonFiniteModels,
        });
      }
    },
    60_000,
  );
});

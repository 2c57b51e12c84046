// The pass runner on its own (pass-runner.ts), with passes written here as data: windows visited in
// the pass's order and consumed in that order, each read once while a set holds it, and a pass whose
// result outgrows the buffer sets refused with its tensor and label named. The engine's own passes
// are checked through the engine (conformance, window-reads, copied-uploads).
import { afterAll, describe, expect, it } from 'vitest';
import { encodeFloats } from '../../format/dtype.ts';
import { tensorInput, type TensorInput } from '../../methods/tensors.ts';
import { openGpuHarness } from '../../test/gpu-harness.ts';
import { engineBuffer } from './buffer-sets.ts';
import { PassRunner, type WindowPass } from './pass-runner.ts';
import { driverMemory, type Window } from './plumbing.ts';
import { Scheduler } from './scheduler.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 2;
const WINDOW = 1_000;

/** A runner with windows of WINDOW elements, and what it needs destroyed after. */
function runner(device: GPUDevice): { runner: PassRunner; destroy(): void } {
  const scheduler = new Scheduler(device, 'PassRunnerTest');
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
  const agentBuffer = engineBuffer(device, 'agents', 256, usage);
  const carry = engineBuffer(device, 'carry', 256, usage);
  const memoryBudget = 64 * 2 ** 20;
  const r = new PassRunner({
    device,
    scheduler,
    agents: AGENTS,
    agentBuffer,
    carry,
    maxWindow: WINDOW,
    memoryBudget,
    driverMemory: driverMemory(memoryBudget, AGENTS, WINDOW),
    uploads: 'mapped',
    poisonOutput: false,
  });
  return {
    runner: r,
    destroy() {
      r.destroy();
      agentBuffer.destroy();
      carry.destroy();
      scheduler.destroy();
    },
  };
}

/** A BF16 tensor of `numel` elements per model, counting its reads per window start. */
function counted(numel: number): { input: TensorInput; reads: Map<number, number> } {
  const models = Array.from({ length: AGENTS + 1 }, (_, k) =>
    encodeFloats(
      'BF16',
      Float64Array.from({ length: numel }, (_, i) => (i % 64) / 64 + k),
    ),
  );
  const inner = tensorInput('model.layers.0.mlp.up_proj.weight', 'BF16', models);
  const reads = new Map<number, number>();
  return {
    reads,
    input: {
      ...inner,
      read(k, start, count, into) {
        if (k === 0) reads.set(start, (reads.get(start) ?? 0) + 1);
        return inner.read(k, start, count, into);
      },
    },
  };
}

/** A pass that clears the first `bytes` of the counters and reads them back: no kernel needed. */
function clearingPass(
  label: string,
  bytes: number,
  order: readonly Window[] | undefined,
  seen: number[],
): WindowPass {
  return {
    label,
    withBase: true,
    ...(order ? { order } : {}),
    groups: () => 1,
    params: () => ({}),
    encode: (encoder, set) => encoder.clearBuffer(set.counters, 0, bytes),
    result: {
      source: 'counters',
      bytes: () => bytes,
      consume: (w, data) => {
        expect(data.subarray(0, bytes).every((b) => b === 0)).toBe(true);
        seen.push(w.index);
      },
    },
  };
}

describe.skipIf(!harness)(`pass runner ${opened.skip ?? ''}`, () => {
  it('visits the windows in the pass’s order, consumes them in it, and reads each once per pass', async () => {
    const h = harness!;
    const { runner: r, destroy } = runner(h.device);
    try {
      await h.run(async () => {
        const { input, reads } = counted(5 * WINDOW - 3);
        const job = await r.job(input, undefined, 4, 0);
        expect(job.windows.map((w) => w.count)).toEqual([1000, 1000, 1000, 1000, 997]);
        const order = [2, 3, 4, 0, 1].map((i) => job.windows[i]!);
        const seen: number[] = [];
        await r.run(job, clearingPass('first', 64, order, seen));
        expect(seen).toEqual([2, 3, 4, 0, 1]);
        expect([...reads.entries()].sort(([a], [b]) => a - b)).toEqual(job.windows.map((w) => [w.start, 1]));
        // The next pass starts on the two windows the sets still hold: they are not read again.
        seen.length = 0;
        await r.run(job, clearingPass('second', 64, undefined, seen));
        expect(seen).toEqual([0, 1, 2, 3, 4]);
        expect(job.windows.map((w) => reads.get(w.start))).toEqual([1, 1, 2, 2, 2]);
      });
    } finally {
      destroy();
    }
    expect(h.liveBuffers()).toEqual([]);
  });

  it('refuses a pass whose result outgrows the buffer sets, naming the tensor and the pass', async () => {
    const h = harness!;
    const { runner: r, destroy } = runner(h.device);
    try {
      await h.run(async () => {
        const { input } = counted(2 * WINDOW);
        const job = await r.job(input, undefined, 4, 0);
        const seen: number[] = [];
        await expect(r.run(job, clearingPass('huge', 2 ** 24, undefined, seen))).rejects.toThrow(
          /model\.layers\.0\.mlp\.up_proj\.weight: pass huge reads back 16777216 bytes of counters, which holds \d+/,
        );
        expect(seen).toEqual([]);
        // The runner goes on serving passes that fit.
        await r.run(job, clearingPass('after', 64, undefined, seen));
        expect(seen).toEqual([0, 1]);
      });
    } finally {
      destroy();
    }
    expect(h.liveBuffers()).toEqual([]);
  });
});

// The GPU engine pipelines tensors: once tensor i is read, uploaded and submitted (onSubmitted), the
// next merge() starts while i reads back and emits. Each output equals the same engine's merge one
// tensor at a time, byte for byte (and the CPU engine's for 16-bit outputs), emits come in call
// order, the buffer sets grow under a tensor still reading back, and the next tensor's reads really
// do start before the last one's output is out. Outputs are poisoned, so an unwritten word shows.
import { afterAll, describe, expect, it } from 'vitest';
import type { FloatDtype } from '../format/dtype.ts';
import { defaultParams } from '../methods/defaults.ts';
import { changedTensorInput } from '../test/tensors.ts';
import { seededRandom } from '../methods/rng.ts';
import type { MethodName } from '../methods/types.ts';
import {
  emptyBranchCounts,
  type BranchCounts,
  type TensorInput,
  type TensorStats,
} from '../methods/tensors.ts';
import { type MergeEngine } from '../engine/contract.ts';
import { concatBytes } from '../io/sink.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import { createGpuEngine } from '../engine/gpu/gpu-engine.ts';
import { openGpuHarness } from '../test/gpu-harness.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 3;
const WINDOW = 1_024;

/**
 * Tensors of one window and of many, in an order that makes the buffer sets grow (a larger window,
 * then wider inputs) while the tensor before is still reading back.
 */
function tensors(seed: number): TensorInput[] {
  const specs: [FloatDtype, number][] = [
    ['BF16', 777],
    ['BF16', 3 * WINDOW - 3],
    ['BF16', 5],
    ['F32', 2_001],
    ['F16', 2 * WINDOW + 1],
    ['BF16', WINDOW],
    ['BF16', 300],
  ];
  return specs.map(([dtype, numel], i) =>
    changedTensorInput(`model.layers.${i}.mlp.up_proj.weight`, dtype, numel, {
      seed: seed * 31 + i,
      agents: AGENTS,
      rate: 0.25,
    }),
  );
}

/** The tensor, its reads logged as "read i". */
function watched(tensor: TensorInput, i: number, events: string[]): TensorInput {
  return {
    ...tensor,
    read: (index, start, count, into) => {
      events.push(`read ${i}`);
      return tensor.read(index, start, count, into);
    },
  };
}

/** An onSubmitted to pass on, and the promise it resolves. */
function submission(): { submitted: () => void; started: Promise<void> } {
  let submitted = (): void => undefined;
  const started = new Promise<void>((resolve) => (submitted = resolve));
  return { submitted, started };
}

interface Run {
  outputs: Uint8Array[];
  branches: BranchCounts;
  /** "read i" and "emit i" in the order they happened. */
  events: string[];
  /** Emits called while an emit before them was still running (MergeOptions.emit says none may be). */
  overlappingEmits: number;
}

/**
 * Merges `list` in order through one engine. Pipelined: merge(i + 1) is called as soon as tensor i
 * says it is submitted, as the driver does; else each merge is awaited before the next.
 */
async function mergeAll(
  engine: MergeEngine,
  list: readonly TensorInput[],
  method: MethodName,
  pipelined: boolean,
): Promise<Run> {
  const events: string[] = [];
  const chunks = list.map(() => [] as Uint8Array[]);
  const branches = emptyBranchCounts(AGENTS);
  const merges: Promise<void>[] = [];
  let emitting = false;
  let overlappingEmits = 0;
  const random = seededRandom(list.length);
  try {
    for (const [i, tensor] of list.entries()) {
      const { submitted, started } = submission();
      const done = engine.merge(watched(tensor, i, events), {
        params: defaultParams(method, AGENTS),
        lambdas: [1.1, 1, 1.2],
        outDtype: tensor.dtype,
        branches,
        emit: async (bytes) => {
          if (emitting) overlappingEmits++;
          emitting = true;
          const copy = bytes.slice();
          // The file system takes its time (0–3 ms): the next tensor's work goes on meanwhile.
          await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 4)));
          events.push(`emit ${i}`);
          chunks[i]!.push(copy);
          emitting = false;
        },
        ...(pipelined ? { onSubmitted: submitted } : {}),
      });
      done.catch(() => undefined);
      merges.push(done);
      await (pipelined ? Promise.race([started, done]) : done);
    }
    await Promise.all(merges);
  } finally {
    await Promise.allSettled(merges);
    engine.destroy();
  }
  return { outputs: chunks.map(concatBytes), branches, events, overlappingEmits };
}

const gpu = (): MergeEngine =>
  createGpuEngine(harness!.device, {
    agents: AGENTS,
    adapterDescription: harness!.adapterDescription,
    maxWindowElements: WINDOW,
    poisonOutput: true,
  });

describe.skipIf(!harness)('the GPU engine, tensors pipelined', () => {
  const methods: MethodName[] = [
    'ram',
    'ties',
    'ramplus_tl',
    'dare_ties',
    'breadcrumbs_ties',
    'task_arithmetic',
    'linear',
  ];
  for (const [m, method] of methods.entries())
    it(`${method}: every tensor equals the merge one at a time, emitted in call order`, async () => {
      const list = tensors(m + 1);
      const pipelined = await harness!.run(() => mergeAll(gpu(), list, method, true));
      const alone = await harness!.run(() => mergeAll(gpu(), list, method, false));
      const cpu = await mergeAll(createCpuEngine({ agents: AGENTS }), list, method, false);
      for (const [i, tensor] of list.entries()) {
        const out = pipelined.outputs[i]!;
        expect(out.length, tensor.name).toBe(tensor.numel * (tensor.dtype === 'F32' ? 4 : 2));
        expect(out, tensor.name).toEqual(alone.outputs[i]);
        if (tensor.dtype !== 'F32') expect(out, tensor.name).toEqual(cpu.outputs[i]);
      }
      expect(pipelined.branches).toEqual(alone.branches);
      expect(pipelined.overlappingEmits).toBe(0);
      // Emits in call order: tensor i's all come before tensor i + 1's first.
      const emits = pipelined.events.filter((e) => e.startsWith('emit')).map((e) => Number(e.slice(5)));
      expect(emits).toEqual([...emits].sort((a, b) => a - b));
      expect(new Set(emits).size).toBe(list.length);
      // The pipeline runs: some tensor's reads begin before the one before has emitted all its output.
      const overlapped = list.slice(1).some((_, j) => {
        const firstRead = pipelined.events.indexOf(`read ${j + 1}`);
        const lastEmit = pipelined.events.lastIndexOf(`emit ${j}`);
        return firstRead >= 0 && firstRead < lastEmit;
      });
      expect(overlapped).toBe(true);
      // Without onSubmitted the engine keeps to one tensor at a time.
      const serial = alone.events.every((e, k) => {
        const [kind, i] = e.split(' ');
        return kind !== 'read' || !alone.events.slice(k + 1).includes(`emit ${Number(i) - 1}`);
      });
      expect(serial).toBe(true);
    });

  it('statistics: every tensor equals the CPU engine and the same engine one tensor at a time', async () => {
    const list = tensors(12);
    const analyzeAll = async (engine: MergeEngine, pipelined: boolean) => {
      const events: string[] = [];
      const results: Promise<TensorStats>[] = [];
      try {
        for (const [i, tensor] of list.entries()) {
          const { submitted, started } = submission();
          const done = engine.analyze(
            watched(tensor, i, events),
            1e-5,
            undefined,
            pipelined ? submitted : undefined,
          );
          done.then(
            () => events.push(`done ${i}`),
            () => undefined,
          );
          results.push(done);
          await (pipelined ? Promise.race([started, done]) : done);
        }
        return { stats: await Promise.all(results), events };
      } finally {
        await Promise.allSettled(results);
        engine.destroy();
      }
    };
    const pipelined = await harness!.run(() => analyzeAll(gpu(), true));
    const alone = await harness!.run(() => analyzeAll(gpu(), false));
    const cpu = await analyzeAll(createCpuEngine({ agents: AGENTS }), false);
    expect(pipelined.stats).toEqual(alone.stats);
    expect(pipelined.stats).toEqual(cpu.stats);
    expect(pipelined.stats.some((s) => (s.counts[2] ?? 0) > 0)).toBe(true);
    // Some tensor's reads began before the one before was done.
    const overlapped = list
      .slice(1)
      .some((_, j) => pipelined.events.indexOf(`read ${j + 1}`) < pipelined.events.indexOf(`done ${j}`));
    expect(overlapped).toBe(true);
  });

  it('a failed read fails its tensor alone; the engine reads the next one into its staging buffers', async () => {
    const list = tensors(13);
    const engine = gpu();
    const results = await harness!.run(async () => {
      const outcomes: (Uint8Array | string)[] = [];
      try {
        // No set grows after tensor 1 (all bf16, none larger), so both go on with the buffers it used.
        const sequence = [list[0]!, list[1]!, list[5]!, list[1]!];
        for (const [i, tensor] of sequence.entries()) {
          let reads = 0;
          // Tensor 1 (three windows) fails on its fifth read: in its second window, after one
          // window went up and while other reads of the same window land in the staging buffer.
          const input: TensorInput =
            i === 1
              ? {
                  ...tensor,
                  read: async (index, start, count, into) => {
                    if (++reads === 5) throw new Error('EIO: the disk went away');
                    return tensor.read(index, start, count, into);
                  },
                }
              : tensor;
          const chunks: Uint8Array[] = [];
          outcomes.push(
            await engine
              .merge(input, {
                params: defaultParams('ram', AGENTS),
                lambdas: [1.1, 1, 1.2],
                outDtype: tensor.dtype,
                emit: async (bytes) => void chunks.push(bytes.slice()),
              })
              .then(
                () => concatBytes(chunks),
                (e: unknown) => String(e),
              ),
          );
        }
        return outcomes;
      } finally {
        engine.destroy();
      }
    });
    expect(results[1]).toContain('EIO: the disk went away');
    const alone = await harness!.run(() => mergeAll(gpu(), [list[0]!, list[5]!, list[1]!], 'ram', false));
    expect(results[0]).toEqual(alone.outputs[0]);
    expect(results[2]).toEqual(alone.outputs[1]);
    expect(results[3]).toEqual(alone.outputs[2]);
  });

  it('a failed emit fails its tensor alone; the tensors before and after it still merge', async () => {
    const list = tensors(9);
    const engine = gpu();
    const outputs = list.map(() => [] as Uint8Array[]);
    const results = await harness!.run(async () => {
      const merges: Promise<void>[] = [];
      try {
        for (const [i, tensor] of list.slice(0, 3).entries()) {
          const { submitted, started } = submission();
          const done = engine.merge(tensor, {
            params: defaultParams('ties', AGENTS),
            lambdas: [1, 1, 1],
            outDtype: tensor.dtype,
            emit: async (bytes) => {
              await new Promise((resolve) => setTimeout(resolve, 2));
              if (i === 1) throw new Error('ENOSPC: no space left');
              outputs[i]!.push(bytes.slice());
            },
            onSubmitted: submitted,
          });
          done.catch(() => undefined);
          merges.push(done);
          // Tensor 1 may fail before its last window is submitted: the next starts then.
          await Promise.race([started, done]).catch(() => undefined);
        }
        return await Promise.allSettled(merges);
      } finally {
        engine.destroy();
      }
    });
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toContain('ENOSPC');
    const alone = await harness!.run(() => mergeAll(gpu(), [list[0]!, list[2]!], 'ties', false));
    expect(concatBytes(outputs[0]!)).toEqual(alone.outputs[0]);
    expect(concatBytes(outputs[2]!)).toEqual(alone.outputs[1]);
  });
});

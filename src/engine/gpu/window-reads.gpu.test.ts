// How often the GPU engine reads each window of an input: the passes before a TIES or tensor-local
// RAM+ merge visit the windows so that they end on the two the merge starts with, which the two
// buffer sets still hold, and keep the others on the GPU where the memory budget has room
// (window-cache.ts). Counted through the tensor's read callback, on a tensor of 7 windows with room
// for all, some or none of them, and on one of 2 (which fits the sets and is read once whatever the
// method).
import { afterAll, describe, expect, it } from 'vitest';
import { encodeFloats, type FloatDtype } from '../../format/dtype.ts';
import { defaultParams } from '../../methods/defaults.ts';
import { seededRandom } from '../../methods/rng.ts';
import { tensorInput } from '../../methods/tensors.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import { createGpuEngine } from './gpu-engine.ts';
import { openGpuHarness } from '../../test/gpu-harness.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import type { WindowCacheReport } from '../contract.ts';
import { methodOf } from '../../methods/registry/index.ts';
import { driverMemory, tieRowsPerAgent, windowCapacity, windowMemory } from './plumbing.ts';
import { MIN_READ_ONCE_WINDOW, readOnceWindow } from './window-cache.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 3;
const NUMEL = 7 * 4_096 - 5;

/**
 * Agents that move 60% of the base by a few steps of 2⁻¹⁰ (bf16: |τ| of one key per first-digit bin,
 * one histogram pass) or, in f32, by such steps plus up to 7·2⁻²² (several keys per bin, two passes).
 */
function input(dtype: FloatDtype, oneFine = false, seed = 0): TensorInput {
  const random = seededRandom((dtype === 'F32' ? 11 : 12) + seed);
  const base = Float64Array.from({ length: NUMEL }, () => Math.floor(random() * 64) / 128);
  const models = [base];
  for (let t = 0; t < AGENTS; t++)
    models.push(
      base.map((b) => {
        if (random() < 0.4) return b;
        // oneFine: every f32 step carries the same bits below the first digit.
        const fine = dtype === 'F32' ? (oneFine ? 1 : Math.floor(random() * 8)) * 2 ** -22 : 0;
        return b + (1 + Math.floor(random() * 4)) * 2 ** -10 + fine;
      }),
    );
  return tensorInput(
    'model.layers.0.self_attn.q_proj.weight',
    dtype,
    models.map((m) => encodeFloats(dtype, m)),
  );
}

/** The memory budget that leaves room for `slots` kept windows beside the buffer sets and the driver. */
function budgetFor(method: MethodName, dtype: FloatDtype, window: number, slots: number): number {
  const bytes = dtype === 'F32' ? 4 : 2;
  const room = windowCapacity(window, AGENTS, bytes, bytes, tieRowsPerAgent(methodOf(method).plan));
  const { readAhead, writeBehind } = driverMemory(2 ** 30, AGENTS, window);
  return windowMemory(room) + readAhead + writeBehind + slots * room.inputBytes;
}

interface Reads {
  /** Windows of agent 0 read. */
  reads: number;
  windows: number;
  /** The merged bytes, in order. */
  output: Uint8Array;
  cache: WindowCacheReport | undefined;
}

/** Windows read of agent 0 during one merge, with room for `slots` kept windows (default: all of them). */
async function agentReads(
  method: MethodName,
  dtype: FloatDtype,
  window: number,
  o: { oneFine?: boolean; slots?: number; params?: Partial<MethodParams> } = {},
): Promise<Reads> {
  const tensor = input(dtype, o.oneFine);
  let reads = 0;
  const counted: TensorInput = {
    ...tensor,
    read: (k, start, count, into) => {
      if (k === 1) reads++;
      return tensor.read(k, start, count, into);
    },
  };
  const engine = createGpuEngine(harness!.device, {
    agents: AGENTS,
    adapterDescription: harness!.adapterDescription,
    maxWindowElements: window,
    ...(o.slots !== undefined ? { memoryBudget: budgetFor(method, dtype, window, o.slots) } : {}),
  });
  const pieces: Uint8Array[] = [];
  try {
    await harness!.run(() =>
      engine.merge(counted, {
        params: { ...defaultParams(method, AGENTS), ...o.params },
        lambdas: [1, 1, 1],
        outDtype: dtype,
        emit: async (bytes) => void pieces.push(bytes.slice()),
      }),
    );
    const output = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
    pieces.reduce((at, p) => (output.set(p, at), at + p.length), 0);
    return { reads, windows: Math.ceil(NUMEL / window), output, cache: engine.windowCache };
  } finally {
    engine.destroy();
  }
}

const W = 4_096;
const WINDOWS = Math.ceil(NUMEL / W);

describe.skipIf(!harness)(`windows read per merge ${opened.skip ?? ''}`, () => {
  it('reads every method once where the budget has room to keep the windows between passes', async () => {
    for (const method of ['ram', 'ties', 'ramplus_tl', 'breadcrumbs_ties'] as const) {
      const r = await agentReads(method, 'BF16', W);
      expect({ method, reads: r.reads, windows: r.windows }).toEqual({ method, reads: WINDOWS, windows: 7 });
      // The pass before the merge keeps every window but the two it ends on (RAM has none).
      expect(r.cache?.kept).toBe(method === 'ram' ? 0 : WINDOWS - 2);
      expect(r.cache?.rereadBytes).toBe(0);
    }
    // Two histogram passes and the merge, every window read once: the second pass trades the windows
    // the first kept back into its sets, and the cache takes each again as a set lets it go (the two the
    // first ended on as well): 5 + 7 windows taken.
    const f32 = await agentReads('ties', 'F32', W);
    expect({ reads: f32.reads, kept: f32.cache?.kept }).toEqual({ reads: WINDOWS, kept: 2 * WINDOWS - 2 });
  });

  it("reads DARE's l1 rescaling, whose pass visits the windows in order, once less its last two", async () => {
    const kept = await agentReads('dare_ties', 'BF16', W, { params: { rescale: 'l1' } });
    expect({ reads: kept.reads, kept: kept.cache?.kept }).toEqual({ reads: WINDOWS + 2, kept: WINDOWS - 2 });
    expect((await agentReads('dare_ties', 'BF16', W, { params: { rescale: 'l1' }, slots: 0 })).reads).toBe(
      2 * WINDOWS,
    );
    // Without l1 DARE-TIES has no pass before the merge.
    expect((await agentReads('dare_ties', 'BF16', W, { slots: 0 })).reads).toBe(WINDOWS);
  });

  it('reads TIES (a sample of one window and one count pass) and ramplus_tl twice less two windows where the budget keeps none', async () => {
    for (const method of ['ties', 'ramplus_tl', 'breadcrumbs_ties'] as const) {
      const r = await agentReads(method, 'BF16', W, { slots: 0 });
      expect({ method, reads: r.reads }).toEqual({ method, reads: 2 * WINDOWS - 2 });
      expect(r.cache?.kept).toBe(0);
      expect(r.cache?.shortBytes).toBe((WINDOWS - 2) * 4 * 2 * W);
    }
  });

  it('reads TIES with a second histogram pass three times less two windows where the budget keeps none', async () => {
    expect((await agentReads('ties', 'F32', W, { slots: 0 })).reads).toBe(3 * WINDOWS - 2);
  });

  it('reads TIES once less where each first-digit bin holds one key with bits below the digit, keeping none', async () => {
    expect((await agentReads('ties', 'F32', W, { oneFine: true, slots: 0 })).reads).toBe(2 * WINDOWS - 2);
  });

  it('keeps as many windows as the budget has room for, the first the merge reads after the two the sets hold', async () => {
    const r = await agentReads('ties', 'BF16', W, { slots: 2 });
    // Windows 2 and 3 kept; 4, 5 and 6 read again.
    expect(r.reads).toBe(WINDOWS + 3);
    expect(r.cache).toMatchObject({ kept: 2, reused: 2, wanted: WINDOWS - 2 });
    const pair = 4 * 2 * W;
    expect(r.cache?.reusedBytes).toBe(2 * pair);
    expect(r.cache?.rereadBytes).toBe(4 * 2 * (NUMEL - 4 * W));
    expect(r.cache?.shortBytes).toBe(3 * pair);
  });

  it('keeps its window buffers and kept windows within the memory budget beside the driver', async () => {
    const device = harness!.device;
    const made: GPUBuffer[] = [];
    const create = device.createBuffer.bind(device);
    device.createBuffer = (descriptor) => {
      const buffer = create(descriptor);
      made.push(buffer);
      return buffer;
    };
    const budget = budgetFor('ties', 'BF16', W, 3);
    try {
      const r = await agentReads('ties', 'BF16', W, { slots: 3 });
      expect(r.reads).toBe(WINDOWS + 2);
    } finally {
      device.createBuffer = create;
    }
    // Window-sized buffers: each set's inputs, staging, output, read-back and tie counts, and the slots.
    const sized = made.filter((b) =>
      /^MergeEngine\.(set\d\.(inputs|staging|output|readback|tieCounts)|kept\d+)$/.test(b.label),
    );
    const kept = sized.filter((b) => b.label.startsWith('MergeEngine.kept'));
    expect(kept.length).toBe(3);
    const { readAhead, writeBehind } = driverMemory(budget, AGENTS, W);
    // The writer's copy of each output (windowMemory counts it) is host memory, not a buffer; a
    // read-back is counted as the output it holds (its floor, the fixed-size counters, is not budgeted).
    const output = 2 * W;
    const writerCopies = 2 * output;
    const counted = sized.reduce((n, b) => n + (b.label.endsWith('readback') ? output : b.size), 0);
    const room = budget - readAhead - writeBehind;
    expect(counted + writerCopies).toBeLessThanOrEqual(room);
    // and a fourth slot would not have fitted.
    expect(counted + writerCopies + 4 * 2 * W).toBeGreaterThan(room);
  });

  it("takes the slots of an engine's earlier tensor for the next one", async () => {
    const merged = async (
      engine: ReturnType<typeof createGpuEngine>,
      tensor: TensorInput,
    ): Promise<string> => {
      const pieces: Uint8Array[] = [];
      await harness!.run(() =>
        engine.merge(tensor, {
          params: defaultParams('ties', AGENTS),
          lambdas: [1, 1, 1],
          outDtype: 'BF16',
          emit: async (bytes) => void pieces.push(bytes.slice()),
        }),
      );
      return Buffer.concat(pieces).toString('hex');
    };
    const make = (slots: number) =>
      createGpuEngine(harness!.device, {
        agents: AGENTS,
        adapterDescription: harness!.adapterDescription,
        maxWindowElements: W,
        memoryBudget: budgetFor('ties', 'BF16', W, slots),
      });
    const [first, second] = [input('BF16', false, 1), input('BF16', false, 2)];
    const shared = make(2);
    const alone = make(0);
    try {
      const a = await merged(shared, first);
      const b = await merged(shared, second);
      expect(shared.windowCache).toMatchObject({ kept: 4, reused: 4, bytes: 2 * 4 * 2 * W });
      expect(a).toBe(await merged(alone, first));
      expect(b).toBe(await merged(alone, second));
      expect(a).not.toBe(b);
    } finally {
      shared.destroy();
      alone.destroy();
    }
  });

  it('merges the same bytes whether the windows were kept or read again', async () => {
    for (const method of ['ties', 'ramplus_tl', 'breadcrumbs_ties'] as const) {
      const kept = await agentReads(method, 'BF16', W);
      const read = await agentReads(method, 'BF16', W, { slots: 0 });
      expect(kept.output.length).toBe(NUMEL * 2);
      expect(Buffer.from(kept.output).equals(Buffer.from(read.output)), method).toBe(true);
    }
  });

  it('reads a tensor of two windows once for every method, keeping nothing', async () => {
    for (const method of ['ram', 'ties', 'ramplus_tl'] as const) {
      const r = await agentReads(method, 'BF16', Math.ceil(NUMEL / 2), { slots: 0 });
      expect({ reads: r.reads, windows: r.windows, kept: r.cache?.kept }).toEqual({
        reads: 2,
        windows: 2,
        kept: 0,
      });
    }
  });
});

// A tensor too large for the budget to keep in the engine's windows, but not in smaller ones: the
// window readOnceWindow names (the command line's --window-elements advice) reads it once.
const LARGE = 6 * MIN_READ_ONCE_WINDOW + 4_099;

/** Base and agents of LARGE bf16 elements: random bits, each agent changing a third of them. */
function largeInput(seed: number): TensorInput {
  const random = seededRandom(seed);
  const base = Uint16Array.from({ length: LARGE }, () => 0x3c00 + Math.floor(random() * 0x800));
  const models = [base];
  for (let t = 0; t < AGENTS; t++)
    models.push(base.map((b) => (random() < 1 / 3 ? b + 1 + Math.floor(random() * 8) : b)));
  return tensorInput(
    'model.layers.0.mlp.up_proj.weight',
    'BF16',
    models.map((m) => new Uint8Array(m.buffer)),
  );
}

/** Every read of agent 0 through `tensor` appended to `into` as [start, count]. */
function readsOf(tensor: TensorInput, into: [number, number][]): TensorInput {
  return {
    ...tensor,
    read: (k, start, count, bytes) => {
      if (k === 1) into.push([start, count]);
      return tensor.read(k, start, count, bytes);
    },
  };
}

/** Whether the ranges cover [0, numel) once each, in any order. */
function coverOnce(ranges: readonly [number, number][], numel: number): boolean {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  let at = 0;
  for (const [start, count] of sorted) {
    if (start !== at) return false;
    at += count;
  }
  return at === numel;
}

describe.skipIf(!harness)(`the smaller windows readOnceWindow names ${opened.skip ?? ''}`, () => {
  const MAX = 2 * MIN_READ_ONCE_WINDOW;
  const MIB = 2 ** 20;
  const limits = (budget: number, tieRows: number) => ({
    budget,
    driver: driverMemory(budget, AGENTS, MAX),
    agents: AGENTS,
    inBytes: 2,
    outBytes: 2,
    tieRows,
  });

  const merge = async (
    engine: ReturnType<typeof createGpuEngine>,
    tensor: TensorInput,
    method: MethodName,
  ): Promise<Buffer> => {
    const pieces: Uint8Array[] = [];
    await harness!.run(() =>
      engine.merge(tensor, {
        params: defaultParams(method, AGENTS),
        lambdas: [1, 1, 1],
        outDtype: 'BF16',
        emit: async (bytes) => void pieces.push(bytes.slice()),
      }),
    );
    return Buffer.concat(pieces);
  };
  const make = (memoryBudget: number, maxWindowElements: number) =>
    createGpuEngine(harness!.device, {
      agents: AGENTS,
      adapterDescription: harness!.adapterDescription,
      maxWindowElements,
      memoryBudget,
    });

  it('reads the tensor once in them where the engine read part of it twice, merging the same bytes', async () => {
    for (const method of ['ramplus_tl', 'ties'] as const) {
      const tieRows = tieRowsPerAgent(methodOf(method).plan);
      // The least budget (in MiB) that some window of MIN_READ_ONCE_WINDOW or more reads LARGE once in.
      let budget = 64 * MIB;
      while (readOnceWindow(LARGE, MAX, limits(budget, tieRows)) === null) budget += MIB;
      const window = readOnceWindow(LARGE, MAX, limits(budget, tieRows));
      expect(window).toBeLessThan(MAX);
      const tensor = largeInput(21);
      const engines = [make(budget, MAX), make(budget, window!), make(2 ** 30, MAX)];
      try {
        const reads: [number, number][][] = [[], [], []];
        const out = [];
        for (const [i, engine] of engines.entries())
          out.push(await merge(engine, readsOf(tensor, reads[i]!), method));
        // In the engine's own windows the budget keeps too few: windows read twice.
        expect(engines[0]!.windowCache?.rereadBytes, method).toBeGreaterThan(0);
        expect(coverOnce(reads[0]!, LARGE), method).toBe(false);
        // In the named ones, every element read once.
        expect(Math.max(...reads[1]!.map(([, count]) => count)), method).toBe(window);
        expect(engines[1]!.windowCache?.rereadBytes, method).toBe(0);
        expect(coverOnce(reads[1]!, LARGE), method).toBe(true);
        // All three merge the same bytes, a roomy engine's included.
        expect(out[0]!.length).toBe(LARGE * 2);
        expect(out[0]!.equals(out[1]!) && out[1]!.equals(out[2]!), method).toBe(true);
      } finally {
        for (const engine of engines) engine.destroy();
      }
    }
  });
});

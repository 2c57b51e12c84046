// The model-level driver on the CPU engine: sharded inputs to sharded outputs, raw copies, the
// statistics pass, checksums, and that failure or cancellation leaves nothing behind.
import { describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { openModel, type Model } from '../format/model.ts';
import { memoryFolder, type FolderSink } from '../io/sink.ts';
import { memorySource } from '../io/source.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import { defaultParams } from '../methods/defaults.ts';
import { referenceMerge } from '../methods/reference.ts';
import { ramLambdas } from '../methods/stats.ts';
import { floatTensor, memoryModel, rawTensor, rng, type FixtureTensor } from '../test/fixtures.ts';
import { analyzeModels, mergeModels } from './driver.ts';
import { CompatibilityError, MergeError, type Progress } from './job.ts';
import { Sha256 } from '../io/sha256.ts';
import type { MergeEngine, MergeOptions } from '../engine/contract.ts';
import type { TensorInput } from '../methods/tensors.ts';

const SHAPES: [string, FloatDtype, number[]][] = [
  ['model.embed_tokens.weight', 'BF16', [17, 8]],
  ['model.layers.0.self_attn.q_proj.weight', 'BF16', [8, 8]],
  ['model.layers.0.mlp.down_proj.weight', 'F16', [5, 7]],
  ['model.layers.1.input_layernorm.weight', 'F32', [3]],
  ['model.scale', 'F32', []],
];

function randomSet(seed: number, agents: number): { base: FixtureTensor[]; agents: FixtureTensor[][] } {
  const random = rng(seed);
  const steps = rawTensor(
    'model.steps',
    'I64',
    [2],
    new Uint8Array(16).map(() => Math.floor(random() * 256)),
  );
  const baseValues = SHAPES.map(([, , shape]) =>
    Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => random() * 2 - 1),
  );
  const base = SHAPES.map(([name, dtype, shape], i) => floatTensor(name, dtype, shape, baseValues[i]!));
  const agentSets = Array.from({ length: agents }, (_, t) =>
    SHAPES.map(([name, dtype, shape], i) => {
      const density = [0.1, 0.5, 0.8][t % 3]!;
      return floatTensor(
        name,
        dtype,
        shape,
        baseValues[i]!.map((v) => (random() < density ? v + (random() - 0.5) * 0.1 : v)),
      );
    }),
  );
  return { base: [...base, steps], agents: agentSets.map((set) => [...set, steps]) };
}

async function setup(seed = 1, agents = 3): Promise<{ base: Model; agents: Model[] }> {
  const set = randomSet(seed, agents);
  return {
    base: await memoryModel('base', set.base, {
      shardBytes: 200,
      config: { model_type: 'toy', torch_dtype: 'bfloat16' },
    }),
    agents: await Promise.all(
      set.agents.map((tensors, t) => memoryModel(`agent-${t}`, tensors, { shardBytes: 300 })),
    ),
  };
}

async function tensorValues(model: Model, name: string): Promise<Float64Array> {
  const t = model.tensors.get(name)!;
  const bytes = await model.source(t.file).read(t.offset, t.end - t.begin);
  return decodeFloats(
    t.dtype as FloatDtype,
    bytes,
    t.shape.reduce((a, b) => a * b, 1),
  );
}

async function rawBytes(model: Model, name: string): Promise<Uint8Array> {
  const t = model.tensors.get(name)!;
  return model.source(t.file).read(t.offset, t.end - t.begin);
}

function labels(agents: Model[]) {
  return { baseLabel: 'base', agentLabels: agents.map((a) => a.name) };
}

describe('mergeModels', () => {
  it('streams sharded inputs into sharded outputs that equal the reference, byte for byte', async () => {
    const { base, agents } = await setup();
    const out = memoryFolder('out');
    const params = defaultParams('ramplus', agents.length);
    const result = await mergeModels({
      base,
      agents,
      engine: createCpuEngine({ agents: 3 }),
      params,
      out,
      shardBytes: 256,
      ...labels(agents),
    });

    const files = [...out.files.keys()].sort();
    expect(files).toContain('model.safetensors.index.json');
    expect(files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f)).length).toBeGreaterThan(1);
    const merged = await openModel(
      'out',
      [...out.files].map(([name, bytes]) => ({ name, source: memorySource(name, bytes) })),
    );
    expect([...merged.tensors.keys()].sort()).toEqual([...base.tensors.keys()].sort());

    const lambdas = ramLambdas(result.analysis!.totals, 'ramplus', params.r, params.alpha);
    expect(result.lambdas).toEqual(lambdas);
    expect(lambdas.some((l) => l > 1)).toBe(true);
    for (const [name, dtype] of SHAPES) {
      const want = referenceMerge(
        {
          name,
          dtype,
          base: await tensorValues(base, name),
          agents: await Promise.all(agents.map((a) => tensorValues(a, name))),
        },
        params,
        lambdas,
      );
      expect(await rawBytes(merged, name)).toEqual(encodeFloats(dtype, want));
    }
    expect(await rawBytes(merged, 'model.steps')).toEqual(await rawBytes(base, 'model.steps'));

    for (const entry of result.files.filter((f) => f.sha256)) {
      const hash = new Sha256();
      hash.update(out.files.get(entry.file)!);
      expect(entry.sha256).toBe(hash.hex());
    }
    const card = new TextDecoder().decode(out.files.get('README.md'));
    expect(card).toContain('merge_method: ramplus');
    expect(JSON.parse(new TextDecoder().decode(out.files.get('config.json'))).torch_dtype).toBe('bfloat16');
  });

  it('converts merged tensors to the requested dtype and copies the rest raw', async () => {
    const { base, agents } = await setup(2);
    const out = memoryFolder('out');
    await mergeModels({
      base,
      agents,
      engine: createCpuEngine({ agents: 3 }),
      params: defaultParams('ram', 3),
      outDtype: 'F32',
      out,
      ...labels(agents),
    });
    const merged = await openModel(
      'out',
      [...out.files].map(([name, bytes]) => ({ name, source: memorySource(name, bytes) })),
    );
    for (const [name] of SHAPES) expect(merged.tensors.get(name)!.dtype).toBe('F32');
    expect(merged.tensors.get('model.steps')!.dtype).toBe('I64');
    expect(JSON.parse(new TextDecoder().decode(out.files.get('config.json'))).torch_dtype).toBe('float32');
  });

  it('statistics totals are the sums of the per-tensor counts', async () => {
    const { base, agents } = await setup(3, 4);
    const analysis = await analyzeModels({
      base,
      agents,
      engine: createCpuEngine({ agents: 4 }),
      epsilon: 1e-5,
    });
    expect(analysis.tensors.map((t) => t.name).sort()).toEqual(SHAPES.map(([name]) => name).sort());
    const totals = analysis.totals;
    for (let t = 0; t < 4; t++) {
      expect(totals.changed[t]).toBe(analysis.tensors.reduce((sum, s) => sum + s.changed[t]!, 0));
      expect(totals.unique[t]).toBe(analysis.tensors.reduce((sum, s) => sum + s.unique[t]!, 0));
      expect(totals.shared[t]).toBe(totals.changed[t]! - totals.unique[t]!);
      expect(totals.overlap[t]!.reduce((a, b) => a + b, 0)).toBe(totals.changed[t]);
    }
    expect(analysis.totals.counts.reduce((a, b) => a + b, 0)).toBe(analysis.totals.numel);
  });

  it('writes the same model with the next tensor read ahead, at any share of the budget', async () => {
    const { base, agents } = await setup(8);
    const outputs: Map<string, Uint8Array>[] = [];
    for (const method of ['ramplus', 'ties'] as const) {
      for (const readAhead of [0, 40, 1 << 20]) {
        const out = memoryFolder('out');
        const result = await mergeModels({
          base,
          agents,
          // Windows of 7 elements: tensors of one window and of several.
          engine: {
            ...createCpuEngine({ agents: 3, maxWindowElements: 7 }),
            driverMemory: { readAhead, writeBehind: readAhead / 4 },
          },
          params: defaultParams(method, agents.length),
          out,
          shardBytes: 256,
          ...labels(agents),
        });
        if (readAhead === 0) {
          outputs.push(out.files);
          expect(result.readAheadTensors).toBe(0);
        } else {
          expect(out.files).toEqual(outputs.at(-1));
          // Every merged tensor after the first came (in part) from memory.
          expect(result.readAheadTensors).toBe(result.mergedTensors - 1);
        }
      }
    }
  });

  it('fails with a write that failed behind the merge, and leaves nothing behind', async () => {
    const { base, agents } = await setup(9);
    const out = memoryFolder('out');
    // The fourth write of a shard: behind the merge, while later tensors are merged.
    const failing = failingAt(out, 4);
    const error = await mergeModels({
      base,
      agents,
      engine: {
        ...createCpuEngine({ agents: 3, maxWindowElements: 7 }),
        driverMemory: { readAhead: 1 << 20, writeBehind: 1 << 20 },
      },
      params: defaultParams('ties', 3),
      out: failing,
      shardBytes: 256,
      ...labels(agents),
    }).catch((e: unknown) => e);
    expect(String(error)).toContain('ENOSPC: no space left');
    expect(failing.writes).toBeGreaterThanOrEqual(4);
    expect([...out.files.keys()]).toEqual([]);
  });

  it('pipelines tensors where the engine can: the same model, two merges in flight at most', async () => {
    // An I32 tensor, copied from the base, sorts between the F32 tensors, which are merged.
    const set = randomSet(10, 3);
    const ids = rawTensor(
      'model.layers.1.mask',
      'I32',
      [3],
      Uint8Array.from({ length: 12 }, (_, i) => i * 7),
    );
    const base = await memoryModel('base', [...set.base, ids], { shardBytes: 200 });
    const agents = await Promise.all(
      set.agents.map((tensors, t) => memoryModel(`agent-${t}`, [...tensors, ids], { shardBytes: 300 })),
    );
    // Small shards (a tensor or two each) and one shard (copied tensors between merged ones).
    for (const [method, shardBytes] of [
      ['ramplus', 256],
      ['ties', 256],
      ['ties', 100_000],
    ] as const) {
      const plainOut = memoryFolder('plain');
      await mergeModels({
        base,
        agents,
        engine: createCpuEngine({ agents: 3 }),
        params: defaultParams(method, 3),
        out: plainOut,
        shardBytes,
        ...labels(agents),
      });
      for (const overlap of [true, false]) {
        const engine = pipelining(createCpuEngine({ agents: 3 }));
        const out = memoryFolder('out');
        const progress: Progress[] = [];
        const result = await mergeModels({
          base,
          agents,
          engine,
          params: defaultParams(method, 3),
          out,
          shardBytes,
          overlap,
          onProgress: (p) => p.stage === 'merge' && progress.push(p),
          ...labels(agents),
        });
        expect(out.files).toEqual(plainOut.files);
        // Pipelined: the next merge starts before the last has emitted; never a third.
        expect(engine.mostInFlight).toBe(overlap ? 2 : 1);
        expect(engine.told).toBe(overlap ? result.mergedTensors : 0);
        // Progress never goes back, and ends at every byte and tensor.
        for (let i = 1; i < progress.length; i++)
          expect(progress[i]!.bytesDone).toBeGreaterThanOrEqual(progress[i - 1]!.bytesDone);
        expect(progress.at(-1)).toMatchObject({ tensorsDone: SHAPES.length + 2 });
        expect(progress.at(-1)!.bytesDone).toBe(progress.at(-1)!.bytesTotal);
      }
    }
  });

  it('refuses F64 tensors an agent changed, naming them, and copies unchanged ones', async () => {
    const set = randomSet(12, 2);
    const f64 = (name: string, values: number[]): FixtureTensor =>
      rawTensor(name, 'F64', [values.length], new Uint8Array(Float64Array.from(values).buffer));
    const same = f64('model.rope_f64', [1, 0.5, 0.25]);
    const base = await memoryModel('base', [...set.base, same, f64('model.f64_scale', [2, 3])]);
    const unchanged = await Promise.all(
      set.agents.map((tensors, t) =>
        memoryModel(`agent-${t}`, [...tensors, same, f64('model.f64_scale', [2, 3])]),
      ),
    );
    const changed = [
      unchanged[0]!,
      await memoryModel('agent-1', [...set.agents[1]!, same, f64('model.f64_scale', [2, 3.5])]),
    ];
    const run = (agents: Model[], out = memoryFolder('out')) =>
      mergeModels({
        base,
        agents,
        engine: createCpuEngine({ agents: 2 }),
        params: defaultParams('task_arithmetic', 2),
        out,
        ...labels(agents),
      });
    const out = memoryFolder('out');
    const error = await run(changed, out).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MergeError);
    expect(String(error)).toMatch(/1 F64 tensor changed by an agent.*: model\.f64_scale\. Store them as F32/);
    expect((error as MergeError).tensor).toBe('model.f64_scale');
    expect([...out.files.keys()]).toEqual([]);
    // Unchanged F64 tensors are copied from the base, as before.
    const result = await run(unchanged);
    const plainBase = await memoryModel('base', set.base);
    const plainAgents = await Promise.all(set.agents.map((tensors, t) => memoryModel(`agent-${t}`, tensors)));
    const plain = await mergeModels({
      base: plainBase,
      agents: plainAgents,
      engine: createCpuEngine({ agents: 2 }),
      params: defaultParams('task_arithmetic', 2),
      out: memoryFolder('plain'),
      ...labels(plainAgents),
    });
    expect(result.copiedTensors).toBe(plain.copiedTensors + 2);
  });

  it('stops the merge in flight when a pipelined write fails, and leaves nothing behind', async () => {
    const { base, agents } = await setup(11);
    for (const failAt of [1, 3, 6]) {
      const out = memoryFolder('out');
      const failing = failingAt(out, failAt);
      const engine = pipelining(createCpuEngine({ agents: 3 }));
      const error = await mergeModels({
        base,
        agents,
        engine,
        params: defaultParams('ram', 3),
        out: failing,
        shardBytes: 100_000,
        ...labels(agents),
      }).catch((e: unknown) => e);
      expect(String(error)).toContain('ENOSPC: no space left');
      expect([...out.files.keys()]).toEqual([]);
      // Every merge has ended when the merge fails.
      expect(engine.running).toBe(0);
    }
  });

  it('leaves nothing behind when cancelled', async () => {
    const { base, agents } = await setup(4);
    const out = memoryFolder('out');
    const controller = new AbortController();
    const engine = createCpuEngine({ agents: 3 });
    let calls = 0;
    const cancelling: MergeEngine = {
      ...engine,
      merge: async (tensor, options) => {
        if (++calls === 3) controller.abort();
        return engine.merge(tensor, options);
      },
    };
    await expect(
      mergeModels({
        base,
        agents,
        engine: cancelling,
        params: defaultParams('ram', 3),
        out,
        shardBytes: 256,
        signal: controller.signal,
        ...labels(agents),
      }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect([...out.files.keys()]).toEqual([]);
  });

  it('names the tensor when the engine fails, and leaves nothing behind', async () => {
    const { base, agents } = await setup(5);
    const out = memoryFolder('out');
    const engine = createCpuEngine({ agents: 3 });
    const failing: MergeEngine = {
      ...engine,
      merge: async (tensor, options) => {
        if (tensor.name.includes('down_proj')) throw new Error('device lost');
        return engine.merge(tensor, options);
      },
    };
    const error = await mergeModels({
      base,
      agents,
      engine: failing,
      params: defaultParams('ram', 3),
      out,
      ...labels(agents),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MergeError);
    expect((error as MergeError).tensor).toBe('model.layers.0.mlp.down_proj.weight');
    expect((error as Error).message).toContain('device lost');
    expect([...out.files.keys()]).toEqual([]);
  });

  it('refuses incompatible agents before any output, listing every difference', async () => {
    const { base } = await setup(6);
    const set = randomSet(6, 1);
    const odd = set.agents[0]!.filter((t) => t.name !== 'model.scale').map((t) =>
      t.name === 'model.layers.0.self_attn.q_proj.weight' ? { ...t, shape: [4, 16] } : t,
    );
    const agent = await memoryModel('odd', odd);
    const out = memoryFolder('out');
    const error = await mergeModels({
      base,
      agents: [agent],
      engine: createCpuEngine({ agents: 1 }),
      params: defaultParams('ram', 1),
      out,
      ...labels([agent]),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompatibilityError);
    const issues = (error as CompatibilityError).report.issues.map((i) => `${i.kind}:${i.tensor}`);
    expect(issues).toEqual(
      expect.arrayContaining(['missing:model.scale', 'shape:model.layers.0.self_attn.q_proj.weight']),
    );
    expect([...out.files.keys()]).toEqual([]);
  });
});

/**
 * A CPU engine that pipelines as the GPU engine does (MergeOptions.onSubmitted): each tensor is
 * computed, then said to be submitted, and emitted after the tensors called before it.
 */
function pipelining(engine: MergeEngine): MergeEngine & {
  mostInFlight: number;
  running: number;
  told: number;
} {
  let computing: Promise<unknown> = Promise.resolve();
  let emitted: Promise<unknown> = Promise.resolve();
  const wrapper = {
    ...engine,
    mostInFlight: 0,
    running: 0,
    told: 0,
    merge: async (tensor: TensorInput, options: MergeOptions) => {
      wrapper.running++;
      wrapper.mostInFlight = Math.max(wrapper.mostInFlight, wrapper.running);
      try {
        const chunks: Uint8Array[] = [];
        const compute = computing.then(() =>
          engine.merge(tensor, { ...options, emit: async (b) => void chunks.push(b.slice()) }),
        );
        computing = compute.catch(() => undefined);
        await compute;
        if (options.onSubmitted) {
          wrapper.told++;
          options.onSubmitted();
        }
        const emit = emitted.then(async () => {
          for (const chunk of chunks) {
            await new Promise((resolve) => setTimeout(resolve, 1));
            if (options.signal?.aborted) {
              const error = new Error('cancelled');
              error.name = 'AbortError';
              throw error;
            }
            await options.emit(chunk);
          }
        });
        emitted = emit.catch(() => undefined);
        await emit;
      } finally {
        wrapper.running--;
      }
    },
  };
  return wrapper;
}

/** `out`, whose shard writes take a millisecond each and whose `failAt`-th fails with ENOSPC. */
function failingAt(out: FolderSink, failAt: number): FolderSink & { writes: number } {
  const folder = {
    ...out,
    writes: 0,
    async create(file: string) {
      const sink = await out.create(file);
      return {
        ...sink,
        write: async (chunk: Uint8Array) => {
          if (file.endsWith('.safetensors') && ++folder.writes === failAt)
            throw new Error('ENOSPC: no space left');
          await new Promise((resolve) => setTimeout(resolve, 1));
          return sink.write(chunk);
        },
      };
    },
  };
  return folder;
}

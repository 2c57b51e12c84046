// The derivation sample, over in-memory models (memory sources): where it reads (evenly spread, bounded, no overlaps) and what it counts.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats } from '../format/dtype.ts';
import { openModel } from '../format/model.ts';
import { nodeModelFiles } from '../io/node.ts';
import { floatTensor, memoryModel, rawTensor, rng } from '../test/fixtures.ts';
import type { ByteSource } from '../io/source.ts';
import type { Model } from '../format/model.ts';
import { DERIVATION_WARN_SHARE, derivationVerdict, samplePlan, sampleDerivation } from './derivation.ts';

/** Values rounded to bf16 and back. */
const encodeAndDecode = (v: number[]): Float64Array =>
  decodeFloats('BF16', encodeFloats('BF16', v), v.length);

const values = (n: number, seed: number): number[] => {
  const next = rng(seed);
  return Array.from({ length: n }, () => next() * 2 - 1);
};

/** The model with every read logged (file, offset, length). */
function logged(model: Model, log: [string, number, number][]): Model {
  return {
    ...model,
    source(file: string): ByteSource {
      const source = model.source(file);
      return {
        name: source.name,
        size: source.size,
        read: (offset, length, into) => {
          log.push([file, offset, length]);
          return source.read(offset, length, into);
        },
      };
    },
  };
}

describe('samplePlan', () => {
  it('takes everything when the tensors are small', () => {
    expect(
      samplePlan([
        { name: 'a', numel: 3 },
        { name: 'empty', numel: 0 },
        { name: 'b', numel: 5 },
      ]),
    ).toEqual([
      { tensor: 'a', start: 0, count: 3 },
      { tensor: 'b', start: 0, count: 5 },
    ]);
  });

  it('spreads bounded, non-overlapping runs evenly over the tensors, in proportion to their size', () => {
    const tensors = [
      { name: 'big', numel: 3_000_000 },
      { name: 'small', numel: 1_000_000 },
    ];
    const plan = samplePlan(tensors, { maxElements: 4096, runs: 64 });
    expect(plan).toHaveLength(64);
    expect(plan.every((r) => r.count === 64)).toBe(true);
    expect(plan.filter((r) => r.tensor === 'big')).toHaveLength(48);
    expect(plan[0]).toEqual({ tensor: 'big', start: 31250, count: 64 });
    expect(plan.at(-1)).toEqual({ tensor: 'small', start: 1_000_000 - 31250, count: 64 });
    expect(samplePlan(tensors, { maxElements: 4096, runs: 64 })).toEqual(plan);
  });

  it('cuts a run at its tensor end and never reads an element twice', () => {
    const plan = samplePlan(
      [
        { name: 'a', numel: 10 },
        { name: 'b', numel: 7 },
      ],
      { maxElements: 8, runs: 4 },
    );
    for (const run of plan) expect(run.start + run.count).toBeLessThanOrEqual(run.tensor === 'a' ? 10 : 7);
    const seen = new Set(
      plan.flatMap((r) => Array.from({ length: r.count }, (_, i) => `${r.tensor}${r.start + i}`)),
    );
    expect(seen.size).toBe(plan.reduce((a, r) => a + r.count, 0));
    expect(seen.size).toBeLessThanOrEqual(8);
  });
});

describe('sampleDerivation', () => {
  const N = 20_000;
  const baseValues = values(N, 1);

  it('counts the bit-identical share of a fine-tune, with a few small reads', async () => {
    // Every fourth element changed: 75% identical.
    const tuned = baseValues.map((v, i) => (i % 4 === 0 ? v + 0.25 : v));
    const base = await memoryModel('base', [
      floatTensor('w', 'BF16', [100, 200], baseValues),
      rawTensor('ids', 'I64', [2], new Uint8Array(16)),
    ]);
    const agent = await memoryModel('agent', [
      floatTensor('w', 'BF16', [100, 200], tuned),
      rawTensor('ids', 'I64', [2], new Uint8Array(16).fill(1)),
    ]);
    const log: [string, number, number][] = [];
    const sample = await sampleDerivation(logged(base, log), logged(agent, log), {
      maxElements: 4096,
      runs: 64,
    });
    expect(sample.tensors).toBe(1);
    expect(sample.sampled).toBe(4096);
    expect(sample.share).toBeGreaterThan(0.7);
    expect(sample.share).toBeLessThan(0.8);
    expect(sample.identical).toBe(Math.round(sample.share * 4096));
    expect(log).toHaveLength(128);
    expect(Math.max(...log.map(([, , length]) => length))).toBe(128);
  });

  it('finds nothing identical in an unrelated model, and everything in the base itself', async () => {
    const base = await memoryModel('base', [floatTensor('w', 'F32', [N], baseValues)]);
    const other = await memoryModel('other', [floatTensor('w', 'F32', [N], values(N, 2))]);
    const unrelated = await sampleDerivation(base, other);
    expect(unrelated.share).toBeLessThan(DERIVATION_WARN_SHARE);
    expect(unrelated.identical).toBe(0);
    const same = await sampleDerivation(base, base);
    expect(same).toMatchObject({ tensors: 1, sampled: 4096, identical: 4096, share: 1, relativeDistance: 0 });
    expect(same.cosine).toBeCloseTo(1, 12);
    expect(derivationVerdict(same)).toBe('sparse');
    expect(Math.abs(unrelated.cosine!)).toBeLessThan(0.1);
    expect(derivationVerdict(unrelated)).toBe('unrelated');
  });

  it('skips tensors whose shape differs and reports an empty sample as share 0', async () => {
    const base = await memoryModel('base', [floatTensor('w', 'F32', [4, 4], values(16, 3))]);
    const reshaped = await memoryModel('agent', [floatTensor('w', 'F32', [2, 8], values(16, 3))]);
    expect(await sampleDerivation(base, reshaped)).toEqual({
      tensors: 0,
      sampled: 0,
      identical: 0,
      share: 0,
      cosine: null,
      relativeDistance: null,
    });
  });

  it('compares an agent stored in another float dtype at the base’s dtype (the default read precision)', async () => {
    const stored = values(64, 7);
    const base = await memoryModel('base', [floatTensor('w', 'BF16', [8, 8], stored)]);
    const bf16 = new Float64Array(encodeAndDecode(stored));
    // Saved in f32 as verl saves them: every element moved less than half a bf16 ulp, one in four by more.
    const wide = Array.from(bf16, (v, i) => (i % 4 === 0 ? v + 0.25 : v + Math.abs(v) * 2 ** -10));
    const agent = await memoryModel('agent', [floatTensor('w', 'F32', [8, 8], wide)]);
    const sample = await sampleDerivation(base, agent);
    expect(sample).toMatchObject({ tensors: 1, sampled: 64, identical: 48 });
    expect(sample.cosine).toBeGreaterThan(0.9);
  });

  it('stops when cancelled', async () => {
    const base = await memoryModel('base', [floatTensor('w', 'F32', [N], baseValues)]);
    const controller = new AbortController();
    controller.abort();
    await expect(sampleDerivation(base, base, { signal: controller.signal })).rejects.toThrow();
  });
});

describe('sampleDerivation: cosine and relative distance', () => {
  it('tells a dense float32 fine-tune (every element moved a little) from an unrelated model', async () => {
    const n = 2000;
    const next = rng(77);
    const base = Array.from({ length: n }, () => next() * 2 - 1);
    // Every element moves by up to ±0.1: nothing stays bit-identical, the direction barely changes.
    const tuned = base.map((v) => v + (next() - 0.5) * 0.2);
    const baseModel = await memoryModel('base', [floatTensor('w', 'F32', [n], base)]);
    const tunedModel = await memoryModel('tuned', [floatTensor('w', 'F32', [n], tuned)]);
    const sample = await sampleDerivation(baseModel, tunedModel);
    // The reference, computed here over the same (f32-rounded) values: the whole tensor is sampled.
    const a = Float32Array.from(base);
    const b = Float32Array.from(tuned);
    let dot = 0;
    let aa = 0;
    let bb = 0;
    let dd = 0;
    for (let i = 0; i < n; i++) {
      dot += a[i]! * b[i]!;
      aa += a[i]! * a[i]!;
      bb += b[i]! * b[i]!;
      dd += (b[i]! - a[i]!) ** 2;
    }
    expect(sample.sampled).toBe(n);
    expect(sample.identical).toBe(0);
    expect(sample.cosine).toBeCloseTo(dot / Math.sqrt(aa * bb), 12);
    expect(sample.relativeDistance).toBeCloseTo(Math.sqrt(dd / aa), 12);
    expect(sample.cosine).toBeGreaterThan(0.9);
    expect(derivationVerdict(sample)).toBe('dense');
  });

  it('reports no cosine against an all-zero base', async () => {
    const zeros = await memoryModel('base', [floatTensor('w', 'F32', [64], new Array(64).fill(0))]);
    const other = await memoryModel('agent', [floatTensor('w', 'F32', [64], values(64, 5))]);
    const sample = await sampleDerivation(zeros, other);
    expect(sample).toMatchObject({ cosine: null, relativeDistance: null });
    expect(derivationVerdict(sample)).toBe('unrelated');
  });
});

const sb3 = [
  process.env.MERGE_STUDIO_CHECKPOINTS,
  join(dirname(fileURLToPath(import.meta.url)), '../../shared/checkpoints'),
  join(dirname(fileURLToPath(import.meta.url)), '../../../shared/checkpoints'),
]
  .filter((dir): dir is string => dir !== undefined)
  .map((dir) => join(dir, 'sb3-rl-zoo-policies'))
  .find((dir) => existsSync(dir));

describe.skipIf(sb3 === undefined)('sampleDerivation on real SB3 policies (float32)', () => {
  const opened: { close(): Promise<void> }[] = [];
  const open = async (name: string) => {
    const files = await nodeModelFiles(join(sb3!, `${name}.safetensors`));
    opened.push(...files.map((f) => f.source));
    return openModel(name, files);
  };
  afterAll(async () => {
    await Promise.all(opened.map((source) => source.close()));
  });

  it('calls two checkpoints of one training run dense and related, and other runs unrelated', async () => {
    const best = await open('halfcheetah-v3_a2c_best');
    const final = await open('halfcheetah-v3_a2c_final');
    const trpo = await open('halfcheetah-v3_trpo_final');
    const sameRun = await sampleDerivation(best, final);
    expect(sameRun.sampled).toBeGreaterThan(0);
    expect(sameRun.share).toBeLessThan(DERIVATION_WARN_SHARE);
    expect(derivationVerdict(sameRun)).toBe('dense');
    const otherRun = await sampleDerivation(best, trpo);
    expect(derivationVerdict(otherRun)).toBe('unrelated');
    expect(otherRun.cosine ?? 0).toBeLessThan(sameRun.cosine!);
  });
});

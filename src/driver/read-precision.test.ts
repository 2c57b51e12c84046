// Reads at a read precision: a window longer than a scratch piece re-encodes piece by piece to the
// same bytes as at once, concurrent reads never share a scratch buffer, and a read at the stored
// dtype is the stored bytes.
import { describe, expect, it } from 'vitest';
import { recodeFloats } from '../format/precision.ts';
import { rng } from '../test/fixtures.ts';
import { MIXED_SHAPES, mixedSet } from '../test/mixed-precision.ts';
import {
  comparedNames,
  defaultReadAs,
  readAt,
  readPrecisionFacts,
  recipeReadDtype,
} from './read-precision.ts';

const N = (1 << 20) * 2 + 5;

function stored(seed: number): Uint8Array {
  const random = rng(seed);
  const values = new Float32Array(N);
  for (let i = 0; i < N; i++) values[i] = (random() - 0.5) * 2 ** (random() * 20 - 10);
  values[7] = 3.4e38;
  return new Uint8Array(values.buffer);
}

/** Byte equality without a deep comparison of millions of elements. */
const same = (a: Uint8Array, b: Uint8Array): boolean =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);

const fetchFrom =
  (bytes: Uint8Array) =>
  async (at: number, length: number, target: Uint8Array): Promise<void> => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    target.set(bytes.subarray(at, at + length));
  };

describe('readAt', () => {
  it('re-encodes a window of several pieces as at once, concurrently, counting overflows', async () => {
    const inputs = [stored(1), stored(2), stored(3)];
    const outs = inputs.map(() => new Uint8Array(N * 2));
    const overflows = await Promise.all(
      inputs.map((bytes, k) => readAt('F32', 'BF16', N, outs[k]!, fetchFrom(bytes))),
    );
    for (const [k, bytes] of inputs.entries()) {
      const want = new Uint8Array(N * 2);
      expect(overflows[k]).toBe(recodeFloats('F32', 'BF16', bytes, want, N));
      expect(same(outs[k]!, want)).toBe(true);
    }
    expect(overflows).toEqual([1, 1, 1]);
  });

  it('reads the stored bytes as they are at their own dtype', async () => {
    const bytes = stored(4);
    const out = new Uint8Array(N * 4);
    expect(await readAt('F32', 'F32', N, out, fetchFrom(bytes))).toBe(0);
    expect(same(out, bytes)).toBe(true);
  });
});

describe('the read precision a recipe writes', () => {
  it('says the default with one dtype where one reads the set so, else with none', async () => {
    // Agents wider than a base stored in bf16 and f16: the default reads each tensor at the base's.
    const mixed = await mixedSet(5, [true, false]);
    const models = [mixed.base, ...mixed.agents];
    const names = comparedNames(mixed.base, mixed.agents);
    expect(names).toEqual(MIXED_SHAPES.map(([name]) => name).sort());
    expect(defaultReadAs(models, names)).toBeNull();
    expect(readPrecisionFacts(mixed.base, mixed.agents, names)).toEqual({
      mixedTensors: 4,
      modelDtypes: [['BF16', 'F16'], ['F32'], ['BF16', 'F16']],
      defaultAs: null,
    });
    // Only the bf16 tensors: bf16 reads them as the default does.
    const bf16 = names.filter((n) => MIXED_SHAPES.find(([name]) => name === n)?.[1] === 'BF16');
    expect(defaultReadAs(models, bf16)).toBe('BF16');
    // Stored alike: f32 widens exactly, so it reads every model as stored.
    const uniform = [mixed.base, ...mixed.rounded];
    expect(defaultReadAs(uniform, names)).toBe('F32');
    expect(readPrecisionFacts(mixed.base, mixed.rounded, names).mixedTensors).toBe(0);
  });

  it('writes an asked precision as itself and stored as f32, which reads every stored value exactly', () => {
    expect(recipeReadDtype('BF16', null)).toBe('BF16');
    expect(recipeReadDtype('F16', 'F32')).toBe('F16');
    expect(recipeReadDtype('stored', 'BF16')).toBe('F32');
    expect(recipeReadDtype('F32', null)).toBe('F32');
    expect(recipeReadDtype(undefined, 'BF16')).toBe('BF16');
    expect(recipeReadDtype(undefined, null)).toBeNull();
  });
});

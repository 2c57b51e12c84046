import { describe, expect, it } from 'vitest';
import { dareHash, dareKeepBelow, dareKept, dareScale, fnv1a32, pcgHash } from './rng.ts';

/** The same hash in BigInt arithmetic: an independent check of the Math.imul / >>> 0 code. */
function pcgBig(value: number): number {
  const m = 2n ** 32n;
  const state = (BigInt(value) * 747796405n + 2891336453n) % m;
  const word = (((state >> ((state >> 28n) + 4n)) ^ state) * 277803737n) % m;
  return Number((word >> 22n) ^ word);
}

describe('fnv1a32', () => {
  it('matches the published FNV-1a test vectors', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });

  it('hashes the UTF-8 bytes', () => {
    expect(fnv1a32('é')).not.toBe(fnv1a32('e'));
    expect(fnv1a32('model.layers.0.mlp.up_proj.weight')).toBe(fnv1a32('model.layers.0.mlp.up_proj.weight'));
  });
});

describe('pcgHash and dareHash', () => {
  it('equals a BigInt rendering of the same formula', () => {
    for (const v of [0, 1, 2, 0x7fffffff, 0x80000000, 0xffffffff, 123456789, 0xdeadbeef]) {
      expect(pcgHash(v)).toBe(pcgBig(v));
    }
  });

  it('gives these values (the WGSL is held to them by the GPU DARE conformance cases)', () => {
    expect([pcgHash(0), pcgHash(1), pcgHash(0xffffffff)]).toEqual([pcgBig(0), pcgBig(1), pcgBig(0xffffffff)]);
    const h = dareHash(7, fnv1a32('w'), 2, 2 ** 32 + 5);
    let want = pcgBig((7 ^ 0x9e3779b9) >>> 0);
    for (const part of [fnv1a32('w'), 2, 5, 1]) want = pcgBig((want ^ part) >>> 0);
    expect(h).toBe(want);
  });

  it('draws different masks for different seeds, tensors, agents and indices', () => {
    const base = dareHash(1, 2, 3, 4);
    expect(dareHash(2, 2, 3, 4)).not.toBe(base);
    expect(dareHash(1, 3, 3, 4)).not.toBe(base);
    expect(dareHash(1, 2, 4, 4)).not.toBe(base);
    expect(dareHash(1, 2, 3, 5)).not.toBe(base);
    expect(dareHash(1, 2, 3, 4 + 2 ** 32)).not.toBe(base);
  });

  it('keeps about density of the entries', () => {
    for (const density of [0.1, 0.5, 0.9]) {
      const keepBelow = dareKeepBelow(density);
      let kept = 0;
      const trials = 50_000;
      for (let i = 0; i < trials; i++) if (dareKept(dareHash(42, 99, 1, i), keepBelow)) kept++;
      expect(Math.abs(kept / trials - density)).toBeLessThan(0.01);
    }
  });
});

describe('DARE thresholds', () => {
  it('keep everything from density 1, nothing at 0, and rescale by 1/density in between', () => {
    expect(dareKeepBelow(1)).toBe(2 ** 24);
    expect(dareKeepBelow(2)).toBe(2 ** 24);
    expect(dareKeepBelow(0)).toBe(0);
    expect(dareKeepBelow(0.5)).toBe(2 ** 23);
    expect(dareKept(0xffffffff, dareKeepBelow(1))).toBe(true);
    expect(dareKept(0, dareKeepBelow(0))).toBe(false);
    expect(dareScale(1)).toBe(1);
    expect(dareScale(0.25)).toBe(4);
    expect(dareScale(0)).toBe(0);
    expect(() => dareKeepBelow(NaN)).toThrow(RangeError);
  });
});

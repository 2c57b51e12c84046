// The DARE keep/drop draw: a counter-based 32-bit hash of (seed, FNV-1a-32 of the tensor name, agent,
// element index), bit-identical to shaders/common/rng.wgsl, so the CPU and GPU drop the same entries.

const encoder = new TextEncoder();

/** FNV-1a, 32 bits, over the UTF-8 bytes of the text. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(text)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

/** The PCG-RXS-M-XS output function of one LCG step, as a stateless 32-bit hash. */
export function pcgHash(value: number): number {
  const state = (Math.imul(value >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** The draw for agent `agent` (0-based) at element `index` (< 2^53) of a tensor. */
export function dareHash(seed: number, nameHash: number, agent: number, index: number): number {
  const lo = index % 2 ** 32;
  const hi = Math.floor(index / 2 ** 32);
  let h = pcgHash((seed ^ 0x9e3779b9) >>> 0);
  h = pcgHash((h ^ nameHash) >>> 0);
  h = pcgHash((h ^ agent) >>> 0);
  h = pcgHash((h ^ lo) >>> 0);
  return pcgHash((h ^ hi) >>> 0);
}

/** An entry is kept iff (hash >>> 8) < this: density quantised to 2^-24, 2^24 (all) from density 1 up. */
export function dareKeepBelow(density: number): number {
  if (!Number.isFinite(density)) throw new RangeError(`DARE density must be a finite number, got ${density}`);
  return Math.min(2 ** 24, Math.max(0, Math.round(density * 2 ** 24)));
}

/** Rescale of kept entries: 1/density below 1 (mergekit keeps density ≥ 1 as is), 0 when none is kept. */
export function dareScale(density: number): number {
  if (density >= 1) return 1;
  return dareKeepBelow(density) === 0 ? 0 : 1 / density;
}

export function dareKept(hash: number, keepBelow: number): boolean {
  return hash >>> 8 < keepBelow;
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

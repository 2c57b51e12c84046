// A small seeded PRNG (xoshiro128**, seeded through splitmix32) so that the demo's training and
// arena episodes are reproduced bit for bit on any JS engine: integer maths only, no Math.random.

/** Mixes one 32-bit word (splitmix32's finaliser); also used to derive seeds from several words. */
function mix32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
  z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
  return (z ^ (z >>> 15)) >>> 0;
}

/** A u32 seed derived from a list of integers (a base seed plus stream ids), order-sensitive. */
export function deriveSeed(...parts: number[]): number {
  let h = 0x6a09e667;
  for (const part of parts) h = mix32((h ^ (part >>> 0)) >>> 0);
  return h >>> 0;
}

export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    // splitmix32 fills the state, so that nearby seeds start far apart and the state is never all zero.
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      return mix32(x);
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next() | 1;
  }

  /** A generator in a given xoshiro128 state (not all zero), e.g. to check it against the reference. */
  static fromState(s0: number, s1: number, s2: number, s3: number): Rng {
    if ((s0 | s1 | s2 | s3) === 0) throw new RangeError('Rng.fromState: the state must not be all zero');
    const rng = new Rng(0);
    rng.s0 = s0 >>> 0;
    rng.s1 = s1 >>> 0;
    rng.s2 = s2 >>> 0;
    rng.s3 = s3 >>> 0;
    return rng;
  }

  /** The next uniform u32. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** A uniform float in [0, 1) with 32 random bits (exact in f64). */
  float(): number {
    return this.nextU32() / 4294967296;
  }

  /** A uniform integer in [0, n), n ≤ 2^32, without modulo bias. */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0 || n > 4294967296) throw new RangeError(`Rng.int: bad bound ${n}`);
    // Rejection sampling over the largest multiple of n below 2^32.
    const limit = 4294967296 - (4294967296 % n);
    for (;;) {
      const x = this.nextU32();
      if (x < limit) return x % n;
    }
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** A seeded stream of floats in [0, 1): fresh, reproducible values, never all zeros (test and bench inputs). */
export function floatStream(seed: number): () => number {
  const generator = new Rng(seed);
  return () => generator.float();
}

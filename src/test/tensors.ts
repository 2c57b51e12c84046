// Seeded random tensors for the engine tests: sparse, heterogeneous changes per agent, exact ties of
// |τ| (values on a coarse grid), sign conflicts, zeros in τ, changes right around ε, negative
// values and f16 subnormals, stored in the tensor's dtype so every value is exact. The seeded PRNG is
// src/methods/rng.ts's and the byte-backed TensorInput src/methods/tensors.ts's (product code uses both).

export { seededRandom } from '../methods/rng.ts';
export { tensorInput } from '../methods/tensors.ts';

import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import type { MergeEngine, MergeOptions } from '../engine/contract.ts';
import type { TensorInput } from '../methods/tensors.ts';
import type { TensorValues } from '../methods/reference.ts';
import { defaultParams } from '../methods/defaults.ts';
import { seededRandom } from '../methods/rng.ts';
import { tensorInput } from '../methods/tensors.ts';
import type { MethodName, MethodParams } from '../methods/types.ts';

export interface TestTensor {
  values: TensorValues;
  /** Raw little-endian bytes of input k (0 = base). */
  bytes: Uint8Array[];
  input: TensorInput;
}

export interface TestTensorSpec {
  name: string;
  dtype: FloatDtype;
  numel: number;
  agents: number;
  seed: number;
  epsilon?: number;
}

/** Merges one tensor with `engine` and returns every byte it emitted, in order. */
export async function mergeBytes(
  engine: MergeEngine,
  input: TensorInput,
  options: Omit<MergeOptions, 'emit'>,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  await engine.merge(input, { ...options, emit: async (b) => void parts.push(b.slice()) });
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Elements of `got` off `want` by more than 2^-20 relative (f32 vs f64 rounding), the first five. */
export function offF32(got: ArrayLike<number>, want: ArrayLike<number>): string[] {
  const off: string[] = [];
  for (let i = 0; i < want.length && off.length < 5; i++) {
    const w = want[i] ?? NaN;
    const g = got[i] ?? NaN;
    if (!(Math.abs(g - w) <= 2 ** -20 * Math.max(1, Math.abs(w)))) off.push(`[${i}] ${g} ≠ ${w}`);
  }
  return off;
}

/**
 * A tensor of uniform base values in [-1, 1) whose agent t changes each element with probability
 * rate · (t + 1) by up to ±0.025, as a TensorInput in `dtype`.
 */
export function changedTensorInput(
  name: string,
  dtype: FloatDtype,
  numel: number,
  options: { seed: number; agents: number; rate: number },
): TensorInput {
  const random = seededRandom(options.seed);
  const base = Float64Array.from({ length: numel }, () => random() * 2 - 1);
  const models = [base];
  for (let t = 0; t < options.agents; t++)
    models.push(base.map((b) => (random() < options.rate * (t + 1) ? b + (random() - 0.5) * 0.05 : b)));
  return tensorInput(
    name,
    dtype,
    models.map((m) => encodeFloats(dtype, m)),
  );
}

export function randomTensor(spec: TestTensorSpec): TestTensor {
  const random = seededRandom(spec.seed);
  const gaussian = (): number => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  const epsilon = spec.epsilon ?? 1e-5;
  const n = spec.numel;
  const base = new Float64Array(n);
  const agents = Array.from({ length: spec.agents }, () => new Float64Array(n));
  // Heterogeneous sparsity: agent t changes a share between 3% and 60% of the elements.
  const rates = agents.map((_, t) => [0.03, 0.6, 0.3, 0.15, 0.45][t % 5]!);
  for (let i = 0; i < n; i++) {
    const kind = random();
    if (kind < 0.3) {
      // Grid values: every τ is a small multiple of 2^-6, exact in every dtype, so |τ| ties abound.
      base[i] = int(-64, 64) / 64;
      agents.forEach((a, t) => {
        const step = int(1, 3) * (random() < 0.5 ? -1 : 1);
        a[i] = random() < rates[t]! ? base[i]! + step / 64 : base[i]!;
      });
    } else if (kind < 0.9) {
      base[i] = gaussian() * 0.05;
      agents.forEach((a, t) => {
        a[i] = random() < rates[t]! ? base[i]! * (1 + gaussian() * 0.01) + gaussian() * 1e-3 : base[i]!;
      });
    } else if (kind < 0.95) {
      // Right around ε on a zero base: τ is the stored value itself.
      base[i] = 0;
      agents.forEach((a) => {
        const factor = [0.5, 0.999, 1, 1.001, 2, 0][int(0, 5)]!;
        a[i] = (random() < 0.5 ? -1 : 1) * factor * epsilon;
      });
    } else {
      // Two agents pull one element in opposite directions by the same amount: a sign conflict whose
      // equal-weight vote is an exact tie.
      base[i] = int(-32, 32) / 64;
      const x = int(1, 4) / 64;
      agents.forEach((a, t) => (a[i] = base[i]! + (t === 0 ? x : t === 1 ? -x : 0)));
    }
  }
  const bytes = [base, ...agents].map((v) => encodeFloats(spec.dtype, v));
  const decoded = bytes.map((b) => decodeFloats(spec.dtype, b, n));
  return {
    values: { name: spec.name, dtype: spec.dtype, base: decoded[0]!, agents: decoded.slice(1) },
    bytes,
    input: tensorInput(spec.name, spec.dtype, bytes),
  };
}

/**
 * Non-default parameters for the engine-versus-reference tables. Dyadic weights keep w·τ exact on
 * grid values, so exact vote ties stay exact under FMA contraction.
 */
export function testParams(method: MethodName, agents: number, seed: number): MethodParams {
  // Four values each, repeated past four agents.
  const each = (values: readonly number[]): number[] =>
    Array.from({ length: agents }, (_, t) => values[t % values.length] ?? 1);
  return {
    ...defaultParams(method, agents),
    weights: each([0.75, 1.25, 1, 0.5]),
    density: each([0.3, 0.5, 0.9, 0.25]),
    lambda: 0.9,
    seed,
    // Breadcrumbs: one gamma whose outliers shrink to fit (0.2 + 0.9 > 1), and 0.05 where that is 0.
    ...(defaultParams(method, agents).gamma ? { gamma: each([0.05, 0.01, 0.2, 0.1]) } : {}),
    // DELLA: density ± ε inside (0, 1) for each of the densities above.
    ...(defaultParams(method, agents).dellaEpsilon ? { dellaEpsilon: each([0.1, 0.2, 0.05, 0.15]) } : {}),
    ...(defaultParams(method, agents).t === undefined ? {} : { t: 0.3 }),
  };
}

// A base stored in bf16 and f16 with agents stored wider (f32, as verl saves them) and one stored
// like the base, for the read-precision tests: the same set stored uniformly at the base's dtypes
// (what the default read precision must equal) and all in f32 (what `stored` must equal).
import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import type { Model } from '../format/model.ts';
import { memoryModel, rawTensor, rng, type FixtureTensor } from './fixtures.ts';

export const MIXED_SHAPES: [string, FloatDtype, number[]][] = [
  ['model.embed_tokens.weight', 'BF16', [19, 8]],
  ['model.layers.0.self_attn.q_proj.weight', 'BF16', [8, 8]],
  ['model.layers.0.mlp.down_proj.weight', 'F16', [5, 7]],
  ['model.norm.weight', 'BF16', [8]],
];

export interface MixedSet {
  base: Model;
  /** As stored: agents of `wide` in F32, the others like the base. */
  agents: Model[];
  /** The agents rounded to the base's dtype per tensor (the default read precision). */
  rounded: Model[];
  /** Every model widened to F32 (read precision `stored`). */
  widened: { base: Model; agents: Model[] };
}

/**
 * `wide[t]`: agent t stored in F32. Its changes are a mix of sub-ulp steps of the base's dtype
 * (gone once rounded), ulp-sized ones and large ones, at rate `rate`.
 */
export async function mixedSet(seed: number, wide: boolean[], rate = 0.6): Promise<MixedSet> {
  const random = rng(seed);
  const steps = rawTensor('model.steps', 'I64', [2], new Uint8Array(16).fill(seed & 0xff));
  const baseValues = MIXED_SHAPES.map(([, dtype, shape]) =>
    decodeFloats(
      dtype,
      encodeFloats(
        dtype,
        Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => random() * 2 - 1),
      ),
      shape.reduce((a, b) => a * b, 1),
    ),
  );
  const agentValues = wide.map(() =>
    baseValues.map((values) =>
      Array.from(values, (v) => {
        if (random() >= rate) return v;
        const kind = random();
        const scale = kind < 0.4 ? 1e-4 : kind < 0.7 ? 8e-3 : 0.2;
        return Math.fround(v + (random() - 0.5) * scale * Math.max(Math.abs(v), 0.05));
      }),
    ),
  );
  const tensors = (
    dtypes: (dtype: FloatDtype) => FloatDtype,
    values: ArrayLike<number>[],
  ): FixtureTensor[] => [
    ...MIXED_SHAPES.map(([name, dtype, shape], i) => ({
      name,
      dtype: dtypes(dtype),
      shape,
      data: encodeFloats(dtypes(dtype), values[i]!),
    })),
    steps,
  ];
  const own = (d: FloatDtype): FloatDtype => d;
  const f32 = (): FloatDtype => 'F32';
  const config = { model_type: 'toy', torch_dtype: 'bfloat16' };
  return {
    base: await memoryModel('base', tensors(own, baseValues), { config }),
    agents: await Promise.all(
      agentValues.map((v, t) =>
        memoryModel(`agent-${t}`, tensors(wide[t] ? f32 : own, v), { shardBytes: 400 }),
      ),
    ),
    rounded: await Promise.all(agentValues.map((v, t) => memoryModel(`agent-${t}`, tensors(own, v)))),
    widened: {
      base: await memoryModel('base', tensors(f32, baseValues), { config }),
      agents: await Promise.all(
        agentValues.map((v, t) =>
          memoryModel(
            `agent-${t}`,
            tensors(f32, wide[t] ? v : v.map((values, i) => roundTo(MIXED_SHAPES[i]![1], values))),
          ),
        ),
      ),
    },
  };
}

function roundTo(dtype: FloatDtype, values: ArrayLike<number>): Float64Array {
  return decodeFloats(dtype, encodeFloats(dtype, values), values.length);
}

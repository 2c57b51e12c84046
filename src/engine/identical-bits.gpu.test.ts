// SPEC.md "Non-finite values", first rule, for finite bits too: where every model holds the same bits
// the merge keeps them, −0.0 and subnormals included, on any GPU (SwiftShader flushes subnormals, and
// −0 + 0 is +0 in task arithmetic). Random inputs seeded with such elements, every method, every
// element of the GPU's output checked against the CPU reference, and the CPU engine bit for bit.
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { ulpOf } from '../methods/float32.ts';
import { referenceMerge, type TensorValues } from '../methods/reference.ts';
import { seededRandom } from '../methods/rng.ts';
import { tensorInput, type TensorInput } from '../methods/tensors.ts';
import { METHODS, type MethodName } from '../methods/types.ts';
import { openGpuHarness } from '../test/gpu-harness.ts';
import { mergeBytes, randomTensor, testParams } from '../test/tensors.ts';
import { createCpuEngine } from './cpu-engine.ts';
import { createGpuEngine } from './gpu/gpu-engine.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

/** Stored bits of −0.0 and of two subnormals (the smallest, and one with a high mantissa). */
const BITS: Record<FloatDtype, { negZero: number; subnormals: number[] }> = {
  F32: { negZero: 0x80000000, subnormals: [0x00000001, 0x807fff00] },
  BF16: { negZero: 0x8000, subnormals: [0x0001, 0x807f] },
  F16: { negZero: 0x8000, subnormals: [0x0001, 0x83ff] },
};

interface Seeded {
  input: TensorInput;
  values: TensorValues;
  /** Elements where every model holds the same bits. */
  same: number[];
}

/**
 * A random tensor in which every seventh element holds the same bits in every model (−0.0, a
 * subnormal or the base's own value), and every eleventh a base of −0.0 that the agents change. (Where
 * the models differ, a subnormal may be flushed on a GPU, as SPEC.md allows; those are not seeded.)
 */
function seeded(
  name: string,
  dtype: FloatDtype,
  numel: number,
  agents: number,
  seed: number,
  shape?: number[],
): Seeded {
  const t = randomTensor({ name, dtype, numel, agents, seed });
  const bytes = dtypeBytes(dtype);
  const words = t.bytes.map((b) =>
    bytes === 2
      ? new Uint16Array(b.buffer, b.byteOffset, numel)
      : new Uint32Array(b.buffer, b.byteOffset, numel),
  );
  const random = seededRandom(seed + 1);
  const { negZero, subnormals } = BITS[dtype];
  const same: number[] = [];
  for (let i = 0; i < numel; i++) {
    if (i % 7 === 3) {
      const pick = Math.floor(random() * 3);
      const bits = pick === 0 ? negZero : pick === 1 ? subnormals[Math.floor(random() * 2)]! : words[0]![i]!;
      for (const w of words) w[i] = bits;
      same.push(i);
    } else if (i % 11 === 5) {
      words[0]![i] = negZero;
    }
  }
  const slots = t.bytes.map((b) => decodeFloats(dtype, b, numel));
  const input = { ...tensorInput(name, dtype, t.bytes), ...(shape ? { shape } : {}) };
  const values: TensorValues = {
    name,
    dtype,
    base: slots[0]!,
    agents: slots.slice(1),
    bits: words,
    ...(shape ? { shape } : {}),
  };
  return { input, values, same };
}

function dtypeBytes(dtype: FloatDtype): number {
  return dtype === 'F32' ? 4 : 2;
}

const ROWS: { dtype: FloatDtype; out: FloatDtype; agents: number; numel: number; window?: number }[] = [
  { dtype: 'BF16', out: 'BF16', agents: 3, numel: 1001, window: 256 },
  { dtype: 'F16', out: 'F16', agents: 2, numel: 777 },
  { dtype: 'F32', out: 'F32', agents: 4, numel: 513, window: 200 },
  { dtype: 'BF16', out: 'F32', agents: 2, numel: 300 },
];

const LAMBDAS = [1.1, 1.2, 1.05, 1.15];

describe.skipIf(!harness)(`identical bits are kept on the GPU ${opened.skip ?? ''}`, () => {
  ROWS.forEach((row, r) => {
    describe(`${row.dtype}→${row.out}, N=${row.agents}`, () => {
      const cases = METHODS.map((m, k) => [m, k] as const);
      it.each(cases)('%s', async (method: MethodName, k) => {
        const agents = method === 'slerp' ? 1 : row.agents;
        // DELLA ranks |τ| by rows: a shape of whole rows.
        const shape = method.startsWith('della') ? [row.numel] : undefined;
        const t = seeded(`same.${r}.${method}`, row.dtype, row.numel, agents, 100 * r + k, shape);
        const params = testParams(method, agents, 77);
        const lambdas = LAMBDAS.slice(0, agents);
        const options = { params, lambdas, outDtype: row.out };
        const gpu = createGpuEngine(harness!.device, {
          agents,
          adapterDescription: harness!.adapterDescription,
          maxWindowElements: row.window,
          poisonOutput: true,
        });
        try {
          const got = await harness!.run(() => mergeBytes(gpu, t.input, options));
          const want = referenceMerge(t.values, params, lambdas);
          const wantBytes = encodeFloats(row.out, want);
          const cpu = await mergeBytes(
            createCpuEngine({ agents, maxWindowElements: row.window }),
            t.input,
            options,
          );
          expect(Buffer.from(cpu).equals(Buffer.from(wantBytes)), 'CPU engine = reference, bit for bit').toBe(
            true,
          );

          const size = dtypeBytes(row.out);
          const bitsAt = (b: Uint8Array, i: number): string =>
            Buffer.from(b.subarray(i * size, (i + 1) * size)).toString('hex');
          const reference = method === 'linear' ? t.values.agents[0]! : t.values.base;
          const referenceBytes = encodeFloats(row.out, reference);
          const sameSet = new Set(t.same);
          // As conformance.gpu.test.ts: 4 × the largest rescale (DARE's 1/density, DELLA's 1/(density − ε)).
          const lowest = params.density.map((d, i) => d - (params.dellaEpsilon?.[i] ?? 0));
          const scale = 4 / Math.min(1, ...params.density, ...lowest);
          const gotValues = decodeFloats(row.out, got, row.numel);
          const bad: string[] = [];
          for (let i = 0; i < row.numel; i++) {
            if (sameSet.has(i)) {
              // The inputs' own bits, in the output dtype (exact: the reference's value, encoded).
              if (
                bitsAt(got, i) !== bitsAt(referenceBytes, i) ||
                bitsAt(wantBytes, i) !== bitsAt(referenceBytes, i)
              )
                bad.push(
                  `[${i}] same bits: got ${bitsAt(got, i)}, reference ${bitsAt(wantBytes, i)}, inputs ${bitsAt(referenceBytes, i)}`,
                );
              continue;
            }
            let magnitude = Math.abs(want[i]!);
            for (const slot of [t.values.base, ...t.values.agents])
              magnitude = Math.max(magnitude, Math.abs(slot[i]!));
            const allowed =
              ulpOf(Math.fround(want[i]!), row.out) + 8 * ulpOf(Math.fround(scale * magnitude), 'F32');
            if (!(Math.abs(gotValues[i]! - want[i]!) <= allowed))
              bad.push(`[${i}] got ${gotValues[i]}, want ${want[i]} ± ${allowed}`);
          }
          expect(bad.slice(0, 5), `${bad.length} elements off`).toEqual([]);
        } finally {
          gpu.destroy();
        }
      });
    });
  });
});

// How often the GPU engine reads each window of an input: the passes before a TIES or tensor-local
// RAM+ merge visit the windows so that they end on the two the merge starts with, which the two
// buffer sets still hold. Counted through the tensor's read callback, on a tensor of 7 windows and on
// one of 2 (which fits the sets and is read once whatever the method).
import { afterAll, describe, expect, it } from 'vitest';
import { encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { defaultParams } from '../methods/defaults.ts';
import { seededRandom, tensorInput } from '../methods/test-tensors.ts';
import type { MethodName } from '../methods/types.ts';
import { createGpuEngine } from './gpu-engine.ts';
import { openGpuHarness } from '../test/gpu-harness.ts';
import type { TensorInput } from '../methods/merge-types.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 3;
const NUMEL = 7 * 4_096 - 5;

/**
 * Agents that move 60% of the base by a few steps of 2⁻¹⁰ (bf16: |τ| of one key per first-digit bin,
 * one histogram pass) or, in f32, by such steps plus up to 7·2⁻²² (several keys per bin, two passes).
 */
function input(dtype: FloatDtype, oneFine = false): TensorInput {
  const random = seededRandom(dtype === 'F32' ? 11 : 12);
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

/** Windows read of agent 0 during one merge. */
async function agentReads(
  method: MethodName,
  dtype: FloatDtype,
  window: number,
  oneFine = false,
): Promise<{ reads: number; windows: number }> {
  const tensor = input(dtype, oneFine);
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
  });
  try {
    await harness!.run(() =>
      engine.merge(counted, {
        params: defaultParams(method, AGENTS),
        lambdas: [1, 1, 1],
        outDtype: dtype,
        emit: async () => undefined,
      }),
    );
  } finally {
    engine.destroy();
  }
  return { reads, windows: Math.ceil(NUMEL / window) };
}

describe.skipIf(!harness)(`windows read per merge ${opened.skip ?? ''}`, () => {
  it('reads a RAM merge once, and TIES (a sample of one window and one count pass) and ramplus_tl twice less two windows', async () => {
    const ram = await agentReads('ram', 'BF16', 4_096);
    expect(ram).toEqual({ reads: 7, windows: 7 });
    for (const method of ['ties', 'ramplus_tl'] as const)
      expect(await agentReads(method, 'BF16', 4_096)).toEqual({ reads: 2 * 7 - 2, windows: 7 });
  });

  it('reads TIES with a second histogram pass three times less two windows', async () => {
    expect(await agentReads('ties', 'F32', 4_096)).toEqual({ reads: 3 * 7 - 2, windows: 7 });
  });

  it('reads TIES once less where each first-digit bin holds one key with bits below the digit', async () => {
    expect(await agentReads('ties', 'F32', 4_096, true)).toEqual({ reads: 2 * 7 - 2, windows: 7 });
  });

  it('reads Breadcrumbs-TIES twice less two windows: its two selects share one sample and one count pass', async () => {
    expect(await agentReads('breadcrumbs_ties', 'BF16', 4_096)).toEqual({ reads: 2 * 7 - 2, windows: 7 });
  });

  it('reads a tensor of two windows once for every method', async () => {
    for (const method of ['ram', 'ties', 'ramplus_tl'] as const)
      expect(await agentReads(method, 'BF16', Math.ceil(NUMEL / 2))).toEqual({ reads: 2, windows: 2 });
  });
});

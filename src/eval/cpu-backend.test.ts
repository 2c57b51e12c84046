// The CPU backend: stored bytes decoded exactly, the reference behind the EvalBackend calls, shapes
// and released objects named.
import { describe, expect, it } from 'vitest';
import { encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { createCpuEvalBackend } from './cpu-backend.ts';
import type { StoredTensor } from './backend.ts';

function tensor(name: string, dtype: FloatDtype, shape: number[], values: number[]): StoredTensor {
  return { name, dtype, shape, bytes: encodeFloats(dtype, values) };
}

describe('cpu eval backend', () => {
  it.each(['F32', 'BF16', 'F16'] as const)('decodes %s weights exactly for linear + bias', async (dtype) => {
    const cpu = createCpuEvalBackend();
    // Values exact in every dtype: small integers and halves.
    const w = await cpu.weight(tensor('w', dtype, [3, 2], [3, 4, 5, 6, 7, -8.5]));
    const b = await cpu.weight(tensor('b', dtype, [3], [1, 0, -1]));
    const x = cpu.upload(Float32Array.from([1, 2, 0, -1]), 2, 2);
    expect(Array.from(await cpu.read(cpu.linear(x, w, b)))).toEqual([12, 17, -11, -3, -6, 7.5]);
  });

  it('scores through linear logits, rounding nothing', async () => {
    const cpu = createCpuEvalBackend();
    const head = await cpu.weight(tensor('lm_head', 'F32', [2, 1], [0, Math.fround(Math.log(3))]));
    const state = cpu.scoreStart(Int32Array.from([1]));
    cpu.scoreChunk(state, cpu.upload(Float32Array.from([1]), 1, 1), head, 0);
    const got = await cpu.scoreRead(state);
    const l = Math.fround(Math.log(3));
    expect(got.logprob[0]).toBeCloseTo(l - Math.log(1 + Math.exp(l)), 14);
    expect(got.argmax[0]).toBe(1);
  });

  it('names wrong shapes and released objects', async () => {
    const cpu = createCpuEvalBackend();
    await expect(
      cpu.weight({ name: 'short', dtype: 'BF16', shape: [2, 2], bytes: new Uint8Array(6) }),
    ).rejects.toThrow(/short: 6 bytes/);
    const w = await cpu.weight(tensor('norm', 'F32', [3], [1, 1, 1]));
    const x = cpu.upload(Float32Array.from([1, 2]), 1, 2);
    expect(() => cpu.rmsNorm(x, w, 1e-6)).toThrow(/norm has shape \[3\], \[2\] expected/);
    expect(() => cpu.linear(x, w)).toThrow(/a matrix \[out, in\] expected/);
    cpu.release(x);
    await expect(cpu.read(x)).rejects.toThrow(/after release/);
  });
});

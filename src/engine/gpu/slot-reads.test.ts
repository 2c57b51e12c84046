import { describe, expect, it } from 'vitest';
import type { TensorInput } from '../../methods/tensors.ts';
import { readSlots, windowParams } from './slot-reads.ts';

/** A BF16 tensor of 10 elements per model whose byte j of model k is 16·k + j; reads may be held. */
function tensor(
  delays: Record<number, number> = {},
  failures: Record<number, string> = {},
): {
  input: TensorInput;
  finished: number[];
} {
  const finished: number[] = [];
  return {
    finished,
    input: {
      name: 'w',
      numel: 10,
      dtype: 'BF16',
      async read(k, start, count, into) {
        expect(into.length).toBe(count * 2);
        await new Promise((r) => setTimeout(r, delays[k] ?? 0));
        finished.push(k);
        if (failures[k]) throw new Error(failures[k]);
        for (let j = 0; j < into.length; j++) into[j] = 16 * k + 2 * start + j;
      },
    },
  };
}

describe('readSlots', () => {
  it('reads each listed model into its slot and zero-fills it to fillTo, nothing else', async () => {
    const staging = new Uint8Array(3 * 12).fill(0xaa);
    // Models 1 and 2 (no base), elements 3..5 (6 bytes), slots of 12 bytes, filled to 8.
    await readSlots(tensor().input, [1, 2], 3, 3, staging, 12, 8);
    const want = new Uint8Array(36).fill(0xaa);
    for (const k of [1, 2]) {
      for (let j = 0; j < 6; j++) want[k * 12 + j] = 16 * k + 6 + j;
      want.fill(0, k * 12 + 6, k * 12 + 8);
    }
    expect([...staging]).toEqual([...want]);
  });

  it('lets every read settle, then throws the first failed slot’s error', async () => {
    // Slot 2 fails at once, slot 1 later; slot 0 finishes last of all.
    const { input, finished } = tensor({ 0: 30, 1: 10 }, { 1: 'slot 1 failed', 2: 'slot 2 failed' });
    const staging = new Uint8Array(3 * 4);
    await expect(readSlots(input, [0, 1, 2], 0, 2, staging, 4, 4)).rejects.toThrow('slot 1 failed');
    expect(finished).toEqual([2, 1, 0]);
  });
});

describe('windowParams', () => {
  it('writes the window, its slot stride in words and its dispatch, its start moved by the offset', () => {
    const w = { index: 3, start: 300, count: 100 };
    const d = { x: 7, y: 2, groups: 13 };
    expect(windowParams(w, 256, d)).toEqual({
      count: 100,
      slotWords: 64,
      start: 300,
      groupsX: 7,
      groups: 13,
    });
    expect(windowParams(w, 256, d, 2 ** 33).start).toBe(2 ** 33 + 300);
  });
});

// The engine card's memory figures for a 7B-shaped tensor: the room the budget leaves to keep windows
// between a counting pass and the merge, and the budget that reads the largest tensor once.
import { describe, expect, it } from 'vitest';
import type { Model, ModelTensor } from '../format/model.ts';
import { estimateMemory, setMemoryBudget } from './engines.ts';
import { DEFAULT_MEMORY_BUDGET } from '../engine/gpu/plumbing.ts';
import { HASH_OFFLOAD_BYTES } from '../io/sha256-offload.ts';

const MIB = 2 ** 20;

/** A base of one bf16 tensor of `numel` elements (a 7B model's embedding: 32000 × 4096). */
function oneTensor(numel: number): { base: Model; report: { ok: true; common: string[]; notes: string[] } } {
  const tensor = {
    name: 'model.embed_tokens.weight',
    dtype: 'BF16',
    shape: [numel / 4096, 4096],
    begin: 0,
    end: numel * 2,
    file: 'model.safetensors',
    offset: 0,
  } as unknown as ModelTensor;
  const base = { tensors: new Map([[tensor.name, tensor]]) } as unknown as Model;
  return { base, report: { ok: true, common: [tensor.name], notes: [] } };
}

describe('estimateMemory: windows kept between passes', () => {
  const { base, report } = oneTensor(32_000 * 4_096);

  it('has no room at the default budget, and names the budget that reads a 16-window tensor once', () => {
    setMemoryBudget(DEFAULT_MEMORY_BUDGET);
    const m = estimateMemory(base, report as never, 3, null);
    expect(m.windowElements).toBe(2 ** 23);
    expect(m.largestWindows).toBe(16);
    expect(m.keptWindows).toBe(0);
    expect(m.rereadTensors).toBe(1);
    // 14 windows of 4 inputs × 16 MiB beyond the sets.
    expect(m.readOnceBudget).toBe(DEFAULT_MEMORY_BUDGET + 14 * 64 * MIB);
  });

  it('keeps more windows at a larger budget, the window size unchanged', () => {
    setMemoryBudget(2048 * MIB);
    try {
      const m = estimateMemory(base, report as never, 3, null);
      expect(m.windowElements).toBe(2 ** 23);
      expect(m.budgetBytes).toBe(2048 * MIB);
      expect(m.keptBytes).toBe(m.keptWindows * 64 * MIB);
      // The sets, the driver and the hashes' copies beside the kept windows stay within the budget
      // (read-ahead 64 MiB, write-behind 16, the hashes' copies two offload chunks).
      const beside = 64 * MIB + 16 * MIB + 2 * HASH_OFFLOAD_BYTES;
      expect(m.gpuBytes + m.keptBytes + beside).toBeLessThanOrEqual(2048 * MIB);
      expect(m.gpuBytes + m.keptBytes + beside + 64 * MIB).toBeGreaterThan(2048 * MIB);
      // Room for all 14 windows past the sets': every tensor is read once.
      expect(m.keptWindows).toBeGreaterThanOrEqual(14);
      expect(m.rereadTensors).toBe(0);
      expect(m.readOnceBudget).toBe(2048 * MIB);
    } finally {
      setMemoryBudget(DEFAULT_MEMORY_BUDGET);
    }
  });

  it('refuses a budget the engine card does not offer', () => {
    expect(() => setMemoryBudget(700 * MIB)).toThrow(/one of/);
  });
});

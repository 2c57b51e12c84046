// Parity with mergekit on the CPU engine (f64): every recipe of src/test/parity/ byte for byte
// against mergekit's semantics, exceptions counted (see parity/cases.ts). PARITY_TABLE=1 prints the
// README's table.
import { describe, expect, it } from 'vitest';
import { CASES, paritySuite, runCase } from './parity/cases.ts';

const { set, outcomes } = paritySuite('CPU');

describe('parity with mergekit (CPU engine; bf16 set, float32 math, bfloat16 output)', () => {
  for (const c of CASES)
    it(`${c.method}: ${c.recipe}`, async () => {
      const outcome = await runCase(set(), c, true);
      outcomes.set(c.method, outcome);
      expect(outcome.elements).toBeGreaterThan(100_000);
      expect(outcome.unexplained).toBe(0);
      // The f64 engine rounds linear's and a graded SLERP's sums once, mergekit each f32 step first:
      // they may differ at bf16 midpoints (counted as nearMidpoint, so never unexplained).
      const f64Midpoints = ['linear (no base_model)', 'slerp (t gradient 0.1 → 0.9)'].includes(c.method);
      if (!c.tieDependent && !f64Midpoints) expect(outcome.differing).toBe(0);
    }, 60_000);

  it('TIES at density 0.5 meets ties at the threshold, and keeps the lowest indices of them', () => {
    const ties = outcomes.get('ties (density 0.5)');
    // bf16 task vectors repeat magnitudes, so ties at the k-th magnitude are common, not a corner case.
    expect(ties?.tieDependent).toBeGreaterThan(0);
    // The reference keeps the lowest indices too (a stable sort): then the two agree everywhere.
    expect(ties?.differing).toBe(0);
  });
});

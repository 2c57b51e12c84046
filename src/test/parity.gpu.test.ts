// Parity with mergekit on WebGPU (SwiftShader in CI): the engine computes in f32 as mergekit does, so
// here linear too must match byte for byte (the f64 CPU engine differs from it at bf16 rounding
// midpoints). A subset of the cases keeps the GPU suite short on SwiftShader (TIES's select passes are
// slow there): RAM, linear without a base, DARE-TIES with the GPU's L1 norms pass (all 11 cases pass
// on the GPU too: drop the filter to run them). PARITY_TABLE=1 prints the table.
import { describe, expect, it } from 'vitest';
import { CASES, paritySuite, runCase } from './parity/cases.ts';

const ON_GPU = new Set(['ram.yml', 'linear.yml', 'dare_ties-l1.yml']);
const { set, outcomes } = paritySuite('WebGPU');

describe('parity with mergekit (WebGPU engine; bf16 set, float32 math, bfloat16 output)', () => {
  for (const c of CASES.filter((c) => ON_GPU.has(c.recipe)))
    it(`${c.method}: ${c.recipe}`, async () => {
      const outcome = await runCase(set(), c, false);
      outcomes.set(c.method, outcome);
      expect(outcome.elements).toBeGreaterThan(100_000);
      expect(outcome.unexplained).toBe(0);
      if (!c.tieDependent) expect(outcome.differing).toBe(0);
    }, 240_000);
});

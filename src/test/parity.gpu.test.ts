// Parity with mergekit on WebGPU (SwiftShader in CI): the engine computes in f32 as mergekit does, so
// here linear too must match byte for byte (the f64 CPU engine differs from it at bf16 rounding
// midpoints). A subset of the cases keeps the GPU suite short on SwiftShader (TIES's select passes are
// slow there): RAM, linear without a base, DARE-TIES with the GPU's L1 norms pass; PARITY_ALL=1 runs
// all of them (scripts/real-gpu-check.sh does, on a real GPU). SwiftShader never fuses a multiply and
// an add; a real GPU's compiler may (WGSL allows it), which this test caught on an H200 before
// unfused_product (shaders/common/window.wgsl). PARITY_TABLE=1 prints the table.
import { describe, expect, it } from 'vitest';
import { CASES, paritySuite, runCase } from './parity/cases.ts';

const ON_GPU = new Set(['ram.yml', 'linear.yml', 'dare_ties-l1.yml']);
const cases = process.env.PARITY_ALL === '1' ? CASES : CASES.filter((c) => ON_GPU.has(c.recipe));
const { set, outcomes } = paritySuite('WebGPU');

describe('parity with mergekit (WebGPU engine; bf16 set, float32 math, bfloat16 output)', () => {
  for (const c of cases)
    it(`${c.method}: ${c.recipe}`, async () => {
      const outcome = await runCase(set(), c, false);
      outcomes.set(c.method, outcome);
      expect(outcome.elements).toBeGreaterThan(100_000);
      expect(outcome.unexplained).toBe(0);
      if (!c.tieDependent) expect(outcome.differing).toBe(0);
    }, 240_000);
});

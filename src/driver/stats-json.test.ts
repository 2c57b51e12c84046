// The statistics JSON: the λ a merge actually applied, ρ = ∞ written as "Infinity", nonFinite per
// model and tensor. Counts are set by hand; λ follows SPEC.md.
import { describe, expect, it } from 'vitest';
import { emptyTensorStats, deriveTensorStats, sumStats } from '../methods/stats.ts';
import { statsJson } from './stats-json.ts';

// Agent 0: 2 unique + 2 shared (ρ = 1); agent 1: only shared changes (ρ = ∞); 3 non-finite elements.
const t = emptyTensorStats('w', 'F32', 20, 2);
t.counts = [11, 4, 2];
t.overlap = [
  [2, 2],
  [0, 2],
];
t.nonFinite = 3;
t.nonFiniteModels = [1, 0, 3];
const analysis = { epsilon: 1e-5, tensors: [deriveTensorStats(t)], totals: sumStats([t]) };
const paths = ['a', 'b'];

interface Json {
  lambdaMethod: string;
  nonFinite: number;
  base: { nonFinite: number };
  models: { rho: number | string; lambda: number | null; nonFinite: number }[];
  tensors: { nonFinite: number; nonFiniteModels: number[] }[];
}

describe('statsJson', () => {
  it('writes ρ = ∞ as "Infinity" and the RAM+ preview λ without a merge', () => {
    const json = statsJson(analysis, paths, 0.1, 2) as Json;
    expect(json.lambdaMethod).toBe('ramplus');
    expect(json.models.map((m) => m.rho)).toEqual([1, 'Infinity']);
    // λ = 1 + r·clip(ρ, 0, α): 1.1 and, for ρ = ∞ clipped to α = 2, 1.2.
    expect(json.models[0]!.lambda).toBeCloseTo(1.1, 12);
    expect(json.models[1]!.lambda).toBeCloseTo(1.2, 12);
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
  });

  it('reports the λ the merge applied, null for the per-tensor λ of ramplus_tl', () => {
    const ram = statsJson(analysis, paths, 0.1, 2, { method: 'ram', lambdas: [1, 1] }) as Json;
    expect([ram.lambdaMethod, ram.models.map((m) => m.lambda)]).toEqual(['ram', [1, 1]]);
    const tl = statsJson(analysis, paths, 0.1, 2, { method: 'ramplus_tl', lambdas: [1, 1] }) as Json;
    expect(tl.models.map((m) => m.lambda)).toEqual([null, null]);
  });

  it('counts nonFinite per model (base apart) and per tensor', () => {
    const json = statsJson(analysis, paths, 0.1, 2) as Json;
    expect([json.nonFinite, json.base.nonFinite]).toEqual([3, 1]);
    expect(json.models.map((m) => m.nonFinite)).toEqual([0, 3]);
    expect(json.tensors[0]).toMatchObject({ nonFinite: 3, nonFiniteModels: [1, 0, 3] });
  });
});

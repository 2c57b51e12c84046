// DELLA's MagPrune against cases worked by hand from mergekit's `della_magprune` (its rank groups, its
// p = (density − ε) + rank_norm·2ε, its refusal of density ± ε outside (0, 1)), and the draws against
// an independent reading of that formula in floating point.
import { describe, expect, it } from 'vitest';
import {
  accumulateDellaNorms,
  checkDella,
  dellaGroups,
  dellaInverseP,
  dellaKeepBelow,
  dellaMask,
  dellaProblem,
  dellaRanks,
  dellaTaus,
  dellaThreshold,
} from './della.ts';
import { dareHash, fnv1a32, seededRandom } from './rng.ts';
import { emptyDareNorms, l1Scales } from './dare-norms.ts';

const UNIT = 2 ** 24;

describe('DELLA rank groups (mergekit ranks along dimension 1, a 1-D tensor as one row)', () => {
  it('groups a 1-D tensor whole, a 2-D one by rows, a 3-D one along dimension 1', () => {
    expect(dellaGroups([7], 7)).toEqual({ length: 7, inner: 1, slab: 7 });
    expect(dellaGroups(undefined, 9)).toEqual({ length: 9, inner: 1, slab: 9 });
    expect(dellaGroups([4, 3], 12)).toEqual({ length: 3, inner: 1, slab: 3 });
    expect(dellaGroups([2, 3, 4], 24)).toEqual({ length: 3, inner: 4, slab: 12 });
  });

  it('ranks |τ| ascending, equal magnitudes by element index', () => {
    expect(Array.from(dellaRanks([5, 1, 5, 0, 3], dellaGroups([5], 5)))).toEqual([3, 1, 4, 0, 2]);
    // Two rows of 3: each ranked on its own.
    expect(Array.from(dellaRanks([9, 2, 2, 0, 7, 1], dellaGroups([2, 3], 6)))).toEqual([2, 0, 1, 0, 2, 1]);
  });

  it('ranks a 3-D tensor along dimension 1 (strided groups)', () => {
    // Shape [1, 3, 2]: element j·2 + k is rank j of group k. Group 0: 4, 1, 6; group 1: 2, 8, 2.
    expect(Array.from(dellaRanks([4, 2, 1, 8, 6, 2], dellaGroups([1, 3, 2], 6)))).toEqual([1, 0, 0, 2, 2, 1]);
  });

  it('refuses a window that cuts a group', () => {
    expect(() => dellaRanks([1, 2, 3, 4], dellaGroups([2, 3], 6))).toThrow(/whole slabs of 3/);
  });
});

describe('DELLA density ± ε (mergekit raises unless both are inside (0, 1))', () => {
  it('accepts density ± ε inside (0, 1), and anything from density 1 up', () => {
    expect(dellaProblem(0.5, 0.15, 0)).toBeUndefined();
    expect(dellaProblem(1, 0.9, 0)).toBeUndefined();
    expect(() => checkDella([0.5, 1], [0.4, 7])).not.toThrow();
  });

  it('refuses density − ε ≤ 0 and density + ε ≥ 1 with the agent, the values and the rule', () => {
    expect(dellaProblem(0.1, 0.15, 1)).toMatch(
      /agent 2: density ± dellaEpsilon must lie inside \(0, 1\).*0\.1 ± 0\.15/,
    );
    expect(dellaProblem(0.75, 0.25, 0)).toMatch(/inside \(0, 1\)/);
    expect(dellaProblem(0.25, 0.25, 0)).toMatch(/inside \(0, 1\)/);
    expect(() => checkDella([0.5, 0.2], [0.1, 0.3])).toThrow(/agent 2/);
    expect(dellaProblem(0.5, -0.1, 0)).toMatch(/≥ 0/);
  });
});

describe('DELLA keep probabilities', () => {
  it('spans density − ε at the smallest |τ| to density + ε at the largest', () => {
    const th = dellaThreshold(0.5, 0.25)!;
    expect(th).toEqual({ low: UNIT / 4, span: UNIT / 2 });
    expect(dellaKeepBelow(th, 0, 5)).toBe(UNIT / 4);
    expect(dellaKeepBelow(th, 2, 5)).toBe(UNIT / 2);
    expect(dellaKeepBelow(th, 4, 5)).toBe((3 * UNIT) / 4);
    // Rank 1 of 4: 0.25 + (1/3)·0.5 = 0.41666…, floor(2^23 / 3) = 2796202 units above 2^22.
    expect(dellaKeepBelow(th, 1, 4)).toBe(UNIT / 4 + 2796202);
    // One element: the middle, p = density.
    expect(dellaKeepBelow(th, 0, 1)).toBe(UNIT / 2);
    expect(dellaThreshold(1, 0.3)).toBeNull();
  });

  it('is mergekit’s p to within 2^-24 over random densities, ε and ranks', () => {
    const random = seededRandom(5);
    for (let trial = 0; trial < 2000; trial++) {
      const density = 0.05 + random() * 0.9;
      const epsilon = random() * Math.min(density, 1 - density) * 0.999;
      const length = 1 + Math.floor(random() * 100_000);
      const rank = Math.floor(random() * length);
      const rankNorm = length > 1 ? rank / (length - 1) : 0.5;
      const p = density - epsilon + rankNorm * 2 * epsilon;
      const got = dellaKeepBelow(dellaThreshold(density, epsilon)!, rank, length) / UNIT;
      expect(Math.abs(got - p)).toBeLessThanOrEqual(2 / UNIT);
    }
  });

  it('scales kept entries by 1/p under the DELLA paper’s rescale', () => {
    expect(dellaInverseP(UNIT / 4)).toBe(4);
    expect(dellaInverseP(0)).toBe(0);
  });
});

describe('DELLA masks', () => {
  const name = 'model.layers.3.mlp.down_proj.weight';

  function row(seed: number, n: number): { base: Float64Array; agent: Float64Array } {
    const random = seededRandom(seed);
    const base = Float64Array.from({ length: n }, () => Math.fround(random() - 0.5));
    const agent = base.map((b) => Math.fround(b + (random() - 0.5) * 0.02));
    return { base, agent };
  }

  it('keeps where the draw falls under p of the entry’s rank, read independently from mergekit’s formula', () => {
    const n = 4001;
    const { base, agent } = row(3, n);
    const density = 0.4;
    const epsilon = 0.3;
    const mask = dellaMask(name, base, agent, 0, 1, dellaGroups([n], n), { density, epsilon, seed: 11 })!;
    // Independent: sort the magnitudes here, p in floating point, the draw's top 24 bits as a fraction.
    const order = Array.from({ length: n }, (_, i) => i).sort(
      (a, b) =>
        Math.abs(Math.fround(agent[a]! - base[a]!)) - Math.abs(Math.fround(agent[b]! - base[b]!)) || a - b,
    );
    let disagree = 0;
    let keptLow = 0;
    let keptHigh = 0;
    order.forEach((i, rank) => {
      const p = density - epsilon + (rank / (n - 1)) * 2 * epsilon;
      const draw = (dareHash(11, fnv1a32(name), 1, i) >>> 8) / UNIT;
      const kept = mask.keepBelow[i]! > 0;
      if (kept !== draw < p && Math.abs(draw - p) > 2 / UNIT) disagree++;
      if (rank < 1000 && kept) keptLow++;
      if (rank >= n - 1000 && kept) keptHigh++;
    });
    expect(disagree).toBe(0);
    // The smallest thousand are kept with p ≈ 0.1 to 0.25, the largest with p ≈ 0.55 to 0.7.
    expect(keptLow).toBeGreaterThan(120);
    expect(keptLow).toBeLessThan(230);
    expect(keptHigh).toBeGreaterThan(560);
    expect(keptHigh).toBeLessThan(670);
  });

  it('keeps the larger |τ| of each row of two where density ± ε reaches 0 and 1 in 2^-24 units', () => {
    const base = new Float64Array(6);
    const agent = Float64Array.from([0.5, -0.25, 0.125, 0.75, -1, 1]);
    const mask = dellaMask(name, base, agent, 0, 0, dellaGroups([3, 2], 6), {
      density: 0.5,
      epsilon: 0.5 - 2 ** -26,
      seed: 1,
    })!;
    // Per row, rank 0 has p = 2^-26 (rounds to 0 units), rank 1 p = 1 − 2^-26 (rounds to 2^24).
    // Row 2 holds |−1| = |1|: the lower index is rank 0.
    expect(Array.from(mask.keepBelow, (b) => (b > 0 ? 1 : 0))).toEqual([1, 0, 0, 1, 0, 1]);
  });

  it('keeps τ whole from density 1 up', () => {
    const { base, agent } = row(4, 50);
    const taus = dellaTaus({ name, base, agents: [agent] }, 0, dellaGroups([50], 50), {
      density: [1],
      dellaEpsilon: [0.15],
      seed: 0,
    });
    expect(Array.from(taus.values[0]!)).toEqual(Array.from(agent, (a, i) => Math.fround(a - base[i]!)));
  });

  it('rescales by 1/p per entry, by the tensor’s l1 factor, or not at all', () => {
    const n = 300;
    const { base, agent } = row(6, n);
    const groups = dellaGroups([3, 100], n);
    const params = { density: [0.5], dellaEpsilon: [0.2], seed: 3 };
    const mask = dellaMask(name, base, agent, 0, 0, groups, { density: 0.5, epsilon: 0.2, seed: 3 })!;
    const paper = dellaTaus({ name, base, agents: [agent] }, 0, groups, params);
    const none = dellaTaus({ name, base, agents: [agent] }, 0, groups, { ...params, rescale: 'none' });
    const norms = emptyDareNorms(1);
    accumulateDellaNorms(norms, { name, base, agents: [agent] }, 0, groups, params);
    const scales = l1Scales(norms);
    const l1 = dellaTaus({ name, base, agents: [agent] }, 0, groups, {
      ...params,
      rescale: 'l1',
      dareScales: scales,
    });
    let kept = 0;
    for (let i = 0; i < n; i++) {
      const tau = Math.fround(agent[i]! - base[i]!);
      const bound = mask.keepBelow[i]!;
      if (bound === 0) {
        expect([paper.values[0]![i], none.values[0]![i], l1.values[0]![i]]).toEqual([0, 0, 0]);
        continue;
      }
      kept++;
      expect(paper.values[0]![i]).toBe(tau * (UNIT / bound));
      expect(none.values[0]![i]).toBe(tau);
      expect(l1.values[0]![i]).toBe(tau * scales[0]!);
    }
    expect(kept).toBeGreaterThan(100);
    expect(kept).toBeLessThan(200);
    // The l1 factor keeps the L1 norm of τ (mergekit's `rescale: true`).
    const sum = (x: ArrayLike<number>) => Array.from(x).reduce((s, e) => s + Math.abs(e), 0);
    const before = sum(Array.from(agent, (a, i) => Math.fround(a - base[i]!)));
    expect(sum(l1.values[0]!)).toBeCloseTo(before, 10);
    expect(() => dellaTaus({ name, base, agents: [agent] }, 0, groups, { ...params, rescale: 'l1' })).toThrow(
      /norms pass/,
    );
  });

  it('draws the same over windows of whole slabs as over the whole tensor', () => {
    const { base, agent } = row(8, 600);
    const groups = dellaGroups([6, 100], 600);
    const params = { density: [0.3], dellaEpsilon: [0.1], seed: 9 };
    const whole = dellaTaus({ name, base, agents: [agent] }, 0, groups, params);
    for (const start of [0, 200, 400]) {
      const part = dellaTaus(
        { name, base: base.subarray(start, start + 200), agents: [agent.subarray(start, start + 200)] },
        start,
        groups,
        params,
      );
      expect(Array.from(part.values[0]!)).toEqual(Array.from(whole.values[0]!.subarray(start, start + 200)));
    }
  });
});

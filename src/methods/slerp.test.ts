// SLERP against cases worked by hand from mergekit's `slerp` (normalised copies for the angle, the
// coefficients applied to the unnormalised tensors, lerp above |dot| 0.9995, no division by a norm of
// at most 1e-8).
import { describe, expect, it } from 'vitest';
import {
  accumulateSlerpSums,
  emptySlerpSums,
  slerpAgentsProblem,
  slerpApply,
  slerpCoefficients,
  slerpMerge,
} from './slerp.ts';
import { seededRandom } from './rng.ts';

const close = (got: ArrayLike<number>, want: number[]) =>
  want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, 12));

describe('slerp', () => {
  it('turns a quarter circle halfway between orthogonal unit vectors', () => {
    close(slerpMerge([1, 0], [0, 1], 0.5), [Math.SQRT1_2, Math.SQRT1_2]);
  });

  it('takes the angle from the normalised tensors and applies it to the stored ones', () => {
    // dot 0, θ = π/2, t = 0.5: both coefficients sin(π/4).
    close(slerpMerge([2, 0], [0, 3], 0.5), [2 * Math.SQRT1_2, 3 * Math.SQRT1_2]);
    // 60°: v0 = (1, 0), v1 = 2·(cos 60°, sin 60°); t = 0.5 → s0 = s1 = sin 30° / sin 60°.
    const s = 0.5 / Math.sin(Math.PI / 3);
    close(slerpMerge([1, 0], [1, Math.sqrt(3)], 0.5), [s * 1 + s * 1, s * Math.sqrt(3)]);
  });

  it('falls back to lerp above |dot| 0.9995, parallel or antiparallel', () => {
    const k = slerpCoefficients({ base: 14, agent: 14 * 4.0001, cross: 28 }, 0.25);
    expect(k.lerp).toBe(true);
    close(slerpMerge([1, 2, 3], [2, 4, 6.001], 0.25), [1.25, 2.5, 0.75 * 3 + 0.25 * 6.001]);
    close(slerpMerge([1, -2], [-3, 6], 0.5), [-1, 2]);
    // Just under the threshold: a slerp.
    const dot = 0.9994;
    expect(slerpCoefficients({ base: 1, agent: 1, cross: dot }, 0.5).lerp).toBe(false);
    expect(slerpCoefficients({ base: 1, agent: 1, cross: 0.9996 }, 0.5).lerp).toBe(true);
  });

  it('does not divide by a norm of at most 1e-8 (a zero base: dot 0)', () => {
    // θ = π/2, t = 1/3: the agent's coefficient sin(π/6) = 0.5.
    close(slerpMerge([0, 0, 0], [1, -2, 4], 1 / 3), [0.5, -1, 2]);
  });

  it('gives the base at t = 0 and the agent at t = 1', () => {
    close(slerpMerge([1, 2], [-2, 0.5], 0), [1, 2]);
    close(slerpMerge([1, 2], [-2, 0.5], 1), [-2, 0.5]);
  });

  it('sums windows as it sums the whole tensor', () => {
    const random = seededRandom(2);
    const base = Float64Array.from({ length: 1000 }, () => random() - 0.5);
    const agent = base.map((b) => b + (random() - 0.5) * 0.5);
    const sums = emptySlerpSums();
    for (let s = 0; s < 1000; s += 300)
      accumulateSlerpSums(sums, base.subarray(s, s + 300), agent.subarray(s, s + 300));
    const k = slerpCoefficients(sums, 0.3);
    expect(k.lerp).toBe(false);
    const got = slerpApply(base, agent, k);
    const want = slerpMerge(base, agent, 0.3);
    got.forEach((g, i) => expect(g).toBeCloseTo(want[i]!, 12));
  });

  it('refuses anything but one agent, and a t that is not a number', () => {
    expect(slerpAgentsProblem(1)).toBeUndefined();
    expect(slerpAgentsProblem(2)).toMatch(/exactly one agent.*2 agents given/);
    expect(() => slerpCoefficients({ base: 1, agent: 1, cross: 0 }, NaN)).toThrow(/finite/);
  });
});

import { describe, expect, it } from 'vitest';
import { at, must } from '../io/checked.ts';
import { changeStats } from './stats.ts';

const m = (values: number[]): Map<string, Float32Array> => new Map([['w', Float32Array.from(values)]]);

describe('changeStats', () => {
  it('counts changed and unique elements as SPEC.md’s worked example does', () => {
    const base = m(new Array<number>(9).fill(0));
    const agents = [
      { name: 'coding', params: m([0, 0.3, 0, 0.6, 0.7, 0, 0.1, 0, 0]) },
      { name: 'tool', params: m([0, 0.7, 0, 0.5, 0.8, 0.2, 0, 0, 0]) },
      { name: 'memory', params: m([0, 0.5, 0, 0.4, 0.9, 0, 0, 0, 0.1]) },
    ];
    for (const s of changeStats(base, agents)) {
      expect([s.changed, s.unique, s.numel]).toEqual([4, 1, 9]);
      expect(s.changedShare).toBeCloseTo(4 / 9, 15);
      expect(s.uniqueShare).toBe(0.25);
      expect(s.perTensor).toEqual([['w', 4, 1, 9]]);
    }
  });

  it('uses a strict |τ| > ε and sums per-tensor counts to the totals', () => {
    const base = new Map([
      ['a', Float32Array.from([1, 1])],
      ['b', Float32Array.from([0, 0, 0])],
    ]);
    const agent = new Map([
      ['a', Float32Array.from([1 + 2 ** -10, 1])],
      ['b', Float32Array.from([2 ** -17, -0.5, 0])],
    ]);
    const s = at(changeStats(base, [{ name: 'x', params: agent }], 2 ** -17), 0);
    expect(s.perTensor).toEqual([
      ['a', 1, 1, 2],
      ['b', 1, 1, 3],
    ]);
    expect([s.changed, s.unique, s.numel]).toEqual([2, 2, 5]);
    expect(() =>
      changeStats(base, [{ name: 'y', params: new Map([['a', must(agent.get('a'), 'a')]]) }]),
    ).toThrow(/lacks b/);
  });
});

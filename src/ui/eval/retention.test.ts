import { describe, expect, it } from 'vitest';
import type { EvalResult } from '../../worker/protocol.ts';
import { retentionLevel, retentionOf } from './retention.ts';

const result: EvalResult = {
  models: [
    { label: 'base', path: 'base' },
    { label: 'coder', path: 'coder' },
    { label: 'merge 1 (ties)', path: 'merges/m1' },
  ],
  examples: [],
  sets: [
    { set: 'coder', tokens: 10, meanNll: [2, 1, 1.5], top1Rate: [0.2, 0.8, 0.6] },
    { set: 'general', tokens: 5, meanNll: [1, 1, 1], top1Rate: [0.5, 0.5, 0.5] },
    { set: 'base', tokens: 5, meanNll: [1, 1, 1], top1Rate: [0, 0, 0] },
  ],
};

describe('retentionOf', () => {
  it('measures every other model against the agent the set is named after', () => {
    const [coder, general, base] = retentionOf(result, [false, true, false]);
    expect(coder?.agent).toBe(1);
    expect(coder?.cells[1]).toBeNull();
    expect(coder?.cells[0]).toEqual({ retention: 0.25, dNll: 1 });
    expect(coder?.cells[2]).toEqual({ retention: 0.6 / 0.8, dNll: 0.5 });
    // A set named after no agent, or after a model that is not an agent, has no retention.
    expect(general).toEqual({ agent: null, cells: [null, null, null] });
    expect(base).toEqual({ agent: null, cells: [null, null, null] });
  });

  it('leaves retention out where the agent has no top-1 token', () => {
    const zero = { ...result, sets: [{ set: 'coder', tokens: 1, meanNll: [1, 2, 3], top1Rate: [0, 0, 0] }] };
    expect(retentionOf(zero, [false, true, false])[0]?.cells[2]).toEqual({ retention: null, dNll: 1 });
  });
});

describe('retentionLevel', () => {
  it('bands retention at 95% and 80%', () => {
    expect(retentionLevel(1.1)).toBe('kept');
    expect(retentionLevel(0.95)).toBe('kept');
    expect(retentionLevel(0.9)).toBe('partial');
    expect(retentionLevel(0.8)).toBe('partial');
    expect(retentionLevel(0.5)).toBe('lost');
    expect(retentionLevel(null)).toBe('none');
  });
});

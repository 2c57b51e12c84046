import { describe, expect, it } from 'vitest';
import { rampPosition } from './RampLegend.tsx';

describe('rampPosition', () => {
  it('maps 0..max to 0..1, linearly or by square root, and an empty scale to 0', () => {
    expect(rampPosition(0.25, 1, 'linear')).toBe(0.25);
    expect(rampPosition(0.25, 1, 'sqrt')).toBe(0.5);
    expect(rampPosition(0.02, 0.08, 'sqrt')).toBeCloseTo(0.5, 12);
    expect(rampPosition(3, 0, 'sqrt')).toBe(0);
  });
});

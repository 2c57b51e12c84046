import { describe, expect, it } from 'vitest';
import { at } from '../../io/checked.ts';
import { AGENT_COLORS, agentColor, contrast, rampColor, textOn } from './colors.ts';

describe('colors', () => {
  it('gives each of 8 agents its own colour, in load order', () => {
    expect(new Set(Array.from({ length: 8 }, (_, t) => agentColor(t))).size).toBe(8);
    expect(agentColor(0)).toBe(AGENT_COLORS[0]);
  });

  it('ramps from dark to light and clamps outside [0, 1]', () => {
    expect(rampColor(0)).toBe('#440154');
    expect(rampColor(1)).toBe('#fde725');
    expect(rampColor(-3)).toBe(rampColor(0));
    expect(rampColor(Number.NaN)).toBe(rampColor(0));
    const steps = Array.from({ length: 11 }, (_, i) => contrast(rampColor(i / 10), '#000000'));
    steps.slice(1).forEach((step, i) => expect(step).toBeGreaterThan(at(steps, i)));
  });

  it('picks a text colour with at least 4.5:1 contrast on every ramp colour and agent colour', () => {
    expect(contrast('#ffffff', '#000000')).toBeCloseTo(21, 6);
    const backgrounds = [...AGENT_COLORS, ...Array.from({ length: 101 }, (_, i) => rampColor(i / 100))];
    for (const bg of backgrounds) expect(contrast(bg, textOn(bg))).toBeGreaterThanOrEqual(4.5);
  });
});

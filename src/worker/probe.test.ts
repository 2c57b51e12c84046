// The self-test's bitwise comparison, without a GPU.
import { describe, expect, it } from 'vitest';
import { compareBf16 } from './probe.ts';

describe('compareBf16', () => {
  it('counts every differing element and reports the first', () => {
    const expected = Uint16Array.of(1, 2, 3, 4, 5);
    const actual = Uint16Array.of(1, 9, 3, 8, 5);
    expect(compareBf16(expected, actual)).toEqual({
      mismatches: 2,
      firstMismatch: { index: 1, expected: 2, actual: 9 },
    });
    expect(compareBf16(expected, expected.slice())).toEqual({ mismatches: 0, firstMismatch: null });
  });

  it('treats zeros of different sign as different', () => {
    expect(compareBf16(Uint16Array.of(0x0000), Uint16Array.of(0x8000)).mismatches).toBe(1);
  });

  it('refuses arrays of different lengths', () => {
    expect(() => compareBf16(new Uint16Array(2), new Uint16Array(3))).toThrow(RangeError);
  });
});

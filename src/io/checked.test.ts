// Checked access: present values come back unchanged, missing ones throw an error that names them.
import { describe, expect, it } from 'vitest';
import { at, atF32, atF64, must } from './checked.ts';

describe('checked access', () => {
  it('must returns a present value (0, "" and false included) and names a missing one', () => {
    expect(must(0, 'count')).toBe(0);
    expect(must('', 'name')).toBe('');
    expect(must(false, 'flag')).toBe(false);
    expect(() => must(undefined, 'tensor a.weight')).toThrow('tensor a.weight is missing');
    expect(() => must(null, 'config')).toThrow('config is missing');
    expect(() => must(new Map<string, number>().get('x'), 'size of x')).toThrow('size of x is missing');
  });

  it('at reads inside the array and throws a RangeError naming the array outside it', () => {
    const items = ['a', 'b', 'c'];
    expect(items.map((_, i) => at(items, i))).toEqual(items);
    expect(() => at(items, 3, 'layers')).toThrow(RangeError);
    expect(() => at(items, 3, 'layers')).toThrow('layers: index 3 is out of range (length 3)');
    expect(() => at(items, -1)).toThrow('index -1 is out of range');
    expect(() => at(items, 0.5)).toThrow(RangeError);
  });

  it('the typed twins read every element, NaN and -0 included, and reject indexes past the end', () => {
    const values = [1.5, -0, Number.NaN, -3.25, 1e30];
    const f32 = Float32Array.from(values);
    const f64 = Float64Array.from(values);
    f32.forEach((v, i) => expect(Object.is(atF32(f32, i), v)).toBe(true));
    f64.forEach((v, i) => expect(Object.is(atF64(f64, i), v)).toBe(true));
    expect(() => atF32(f32, values.length, 'head.weight')).toThrow(
      `head.weight: index ${values.length} is out of range (length ${values.length})`,
    );
    expect(() => atF64(f64, -1)).toThrow(RangeError);
    expect(() => atF64(new Float64Array(0), 0)).toThrow('Float64Array: index 0');
  });
});

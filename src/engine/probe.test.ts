// The self-test's CPU side and its WGSL contract, without a GPU: data, reference, packing, comparison.
import { describe, expect, it } from 'vitest';
import type * as Reflection from 'wgsl_reflect';
import probeWgsl from '../../shaders/probe.wgsl?raw';
import {
  compareBf16,
  makeProbeData,
  packBf16,
  PROBE_BINDINGS,
  PROBE_ELEMENTS,
  PROBE_PARAMS_LAYOUT,
  PROBE_SEED,
  probeReference,
  unpackBf16,
} from './probe.ts';

// wgsl_reflect's "main" is CommonJS inside a "type": "module" package, which Node refuses to load;
// its ES build is the same code (untyped by path, hence the cast to the package's own types).
const reflectionBuild: string = 'wgsl_reflect/wgsl_reflect.module.js';
const { ResourceType, WgslReflect } = (await import(/* @vite-ignore */ reflectionBuild)) as typeof Reflection;

const f32Bits = (value: number): number => new Uint32Array(new Float32Array([value]).buffer)[0]!;

describe('probe data', () => {
  it('is the same for the same seed and differs for another', () => {
    const first = makeProbeData(64, PROBE_SEED);
    const again = makeProbeData(64, PROBE_SEED);
    const other = makeProbeData(64, PROBE_SEED + 1);
    expect(again.a).toEqual(first.a);
    expect(again.b).toEqual(first.b);
    expect(again.scale).toBe(first.scale);
    expect(other.a).not.toEqual(first.a);
  });

  it('keeps every input normal, nonzero and within 2^±20, with both signs', () => {
    const { a, b, scale } = makeProbeData(PROBE_ELEMENTS, PROBE_SEED);
    const exponents = [...a, ...b].map((bits) => (bits >>> 7) & 0xff);
    expect(Math.min(...exponents)).toBeGreaterThanOrEqual(127 - 20);
    expect(Math.max(...exponents)).toBeLessThanOrEqual(127 + 20);
    expect([...a].filter((bits) => bits & 0x8000).length).toBeGreaterThan(PROBE_ELEMENTS / 4);
    expect(Math.abs(scale)).toBeGreaterThanOrEqual(0.5);
    expect(Math.abs(scale)).toBeLessThan(4);
    // The scale must be a bf16 value, or the product would not be exact in f32.
    expect(f32Bits(scale) & 0xffff).toBe(0);
  });

  it('exercises round-half-to-even: some f32 results sit exactly halfway between two bf16', () => {
    const { a, b, scale } = makeProbeData(PROBE_ELEMENTS, PROBE_SEED);
    const view = new Float32Array(1);
    const bits = new Uint32Array(view.buffer);
    let ties = 0;
    for (let i = 0; i < a.length; i++) {
      view[0] = new Float32Array(new Uint32Array([a[i]! << 16]).buffer)[0]! * scale;
      view[0] = view[0] + new Float32Array(new Uint32Array([b[i]! << 16]).buffer)[0]!;
      if ((bits[0]! & 0xffff) === 0x8000) ties++;
    }
    expect(ties).toBeGreaterThan(0);
  });
});

describe('probeReference', () => {
  const one = (a: number, scale: number, b: number): number =>
    probeReference({ a: Uint16Array.of(a), b: Uint16Array.of(b), scale })[0]!;

  it('computes a * scale + b in bf16', () => {
    // 1.5 * 2 + 0.25 = 3.25
    expect(one(0x3fc0, 2, 0x3e80)).toBe(0x4050);
    // -1 * 0.5 + 1 = 0.5
    expect(one(0xbf80, 0.5, 0x3f80)).toBe(0x3f00);
  });

  it('rounds halfway cases to the even bf16', () => {
    // (1 + 2^-7) * 1.5 = 1.5 + 2^-7 + 2^-8: halfway, rounds up to the even mantissa 0x42.
    expect(one(0x3f81, 1.5, 0x0000)).toBe(0x3fc2);
    // (1 + 3 * 2^-7) * 1.5 = 1.5 + 2^-5 + 2^-8: halfway, stays at the even mantissa 0x44.
    expect(one(0x3f83, 1.5, 0x0000)).toBe(0x3fc4);
  });
});

describe('bf16 packing', () => {
  it('round-trips an odd count and leaves the last upper half zero', () => {
    const values = Uint16Array.of(0x0001, 0xabcd, 0xffff, 0x8000, 0x1234);
    const words = packBf16(values);
    expect([...words]).toEqual([0xabcd0001, 0x8000ffff, 0x00001234]);
    expect(unpackBf16(words, values.length)).toEqual(values);
  });
});

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

describe('shaders/probe.wgsl contract', () => {
  const reflect = new WgslReflect(probeWgsl);

  it('declares the bindings the pipeline layout writes', () => {
    const [group, ...others] = reflect.getBindGroups();
    expect(others).toHaveLength(0);
    const byBinding = new Map((group ?? []).map((variable) => [variable.binding, variable]));
    expect(byBinding.size).toBe(4);
    expect(byBinding.get(PROBE_BINDINGS.params)?.resourceType).toBe(ResourceType.Uniform);
    expect(byBinding.get(PROBE_BINDINGS.a)).toMatchObject({
      resourceType: ResourceType.Storage,
      access: 'read',
    });
    expect(byBinding.get(PROBE_BINDINGS.b)).toMatchObject({
      resourceType: ResourceType.Storage,
      access: 'read',
    });
    expect(byBinding.get(PROBE_BINDINGS.result)).toMatchObject({
      resourceType: ResourceType.Storage,
      access: 'read_write',
    });
  });

  it('lays out the uniform as the TypeScript writes it', () => {
    const params = reflect.uniforms.find((variable) => variable.binding === PROBE_BINDINGS.params);
    expect(params?.size).toBe(PROBE_PARAMS_LAYOUT.size);
    const offsets = Object.fromEntries((params?.members ?? []).map((member) => [member.name, member.offset]));
    expect(offsets).toEqual({
      scale: PROBE_PARAMS_LAYOUT.scaleOffset,
      count: PROBE_PARAMS_LAYOUT.countOffset,
    });
  });

  it('has one compute entry point with an overridable workgroup size', () => {
    expect(reflect.entry.compute.map((entry) => entry.name)).toEqual(['main']);
    expect(reflect.overrides.map((override) => override.name)).toEqual(['WORKGROUP_SIZE']);
  });
});

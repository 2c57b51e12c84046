import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isNativeTick, paceNativeTicks, TICK_MS } from './tick-pacing.ts';

// A native function without a name, as dawn.node's tick callback is (Napi::Function::New).
const nativeUnnamed = Function.prototype as unknown as () => void;

afterEach(() => vi.restoreAllMocks());

describe('isNativeTick', () => {
  it('knows a native function without a name', () => {
    expect(nativeUnnamed.name).toBe('');
    expect(isNativeTick(nativeUnnamed)).toBe(true);
  });

  it('leaves script functions, bound functions and named natives alone', () => {
    expect(isNativeTick(() => {})).toBe(false);
    expect(isNativeTick(function () {})).toBe(false);
    expect(isNativeTick((() => {}).bind(null))).toBe(false);
    expect(isNativeTick(nativeUnnamed.bind(null))).toBe(false);
    expect(isNativeTick(Math.max)).toBe(false);
    expect(isNativeTick('function () { [native code] }')).toBe(false);
  });
});

describe('paceNativeTicks', () => {
  function fakeTarget() {
    const calls: unknown[][] = [];
    const original = ((...args: unknown[]) => {
      calls.push(args);
      return 'immediate';
    }) as unknown as typeof setImmediate;
    return { target: { setImmediate: original }, original, calls };
  }

  it('sends a native tick through a timer of TICK_MS and passes everything else on unchanged', () => {
    const { target, calls } = fakeTarget();
    const timeout = vi.spyOn(globalThis, 'setTimeout');
    const undo = paceNativeTicks(target);
    const script = vi.fn();
    expect(target.setImmediate(script, 1, 'two')).toBe('immediate');
    expect(calls).toEqual([[script, 1, 'two']]);
    const timer = target.setImmediate(nativeUnnamed);
    expect(calls).toHaveLength(1);
    expect(timeout).toHaveBeenCalledWith(nativeUnnamed, TICK_MS);
    clearTimeout(timer as unknown as NodeJS.Timeout);
    undo();
  });

  it('installs once, and undoes only what it installed', () => {
    const { target, original } = fakeTarget();
    const undo = paceNativeTicks(target);
    const paced = target.setImmediate;
    expect(paced).not.toBe(original);
    const second = paceNativeTicks(target);
    expect(target.setImmediate).toBe(paced);
    second();
    expect(target.setImmediate).toBe(paced);
    undo();
    expect(target.setImmediate).toBe(original);
  });

  it('keeps util.promisify(setImmediate) resolving on the next turn', async () => {
    const target = { setImmediate: globalThis.setImmediate };
    const undo = paceNativeTicks(target);
    try {
      await expect(promisify(target.setImmediate)('value')).resolves.toBe('value');
    } finally {
      undo();
    }
  });
});

import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isNativeTick, paceNativeTicks, SPIN_MS, TICK_MS, type PacingTarget } from './tick-pacing.ts';

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
  /** A stand-in global: a recording setImmediate, a GPUBuffer class with mapAsync, and a clock. */
  function fakeTarget() {
    const calls: unknown[][] = [];
    const original = ((...args: unknown[]) => {
      calls.push(args);
      return 'immediate';
    }) as unknown as typeof setImmediate;
    class GPUBuffer {
      mapAsync(mode: number): string {
        return `mapped ${mode}`;
      }
    }
    const clock = { ms: 100 };
    const target: PacingTarget = { setImmediate: original, GPUBuffer };
    const installed = paceNativeTicks(target, () => clock.ms);
    return { target, original, calls, clock, installed, buffer: new GPUBuffer() };
  }

  it('passes every callback but dawn.node’s on to setImmediate unchanged', () => {
    const { target, calls, installed } = fakeTarget();
    const script = vi.fn();
    expect(target.setImmediate(script, 1, 'two')).toBe('immediate');
    expect(calls).toEqual([[script, 1, 'two']]);
    installed.undo();
  });

  it('lets a wait’s ticks spin for SPIN_MS after it begins, then puts them on the TICK_MS timer', () => {
    const { target, calls, clock, installed, buffer } = fakeTarget();
    const timeout = vi.spyOn(globalThis, 'setTimeout');
    expect(buffer.mapAsync(1)).toBe('mapped 1');
    target.setImmediate(nativeUnnamed);
    clock.ms += SPIN_MS / 2;
    target.setImmediate(nativeUnnamed);
    expect(calls).toEqual([[nativeUnnamed], [nativeUnnamed]]);
    expect(timeout).not.toHaveBeenCalled();
    clock.ms += SPIN_MS;
    const timer = target.setImmediate(nativeUnnamed);
    expect(calls).toHaveLength(2);
    expect(timeout).toHaveBeenCalledWith(expect.any(Function), TICK_MS);
    expect(installed.counts).toEqual({ spun: 2, paced: 1 });
    clearTimeout(timer as unknown as NodeJS.Timeout);
    installed.undo();
  });

  it('runs a tick waiting on the timer at once when a new wait begins, and only once', () => {
    const { target, calls, clock, installed, buffer } = fakeTarget();
    const cleared = vi.spyOn(globalThis, 'clearTimeout');
    clock.ms += 10 * SPIN_MS;
    const timer = target.setImmediate(nativeUnnamed);
    expect(calls).toHaveLength(0);
    buffer.mapAsync(2);
    buffer.mapAsync(3);
    expect(cleared).toHaveBeenCalledWith(timer);
    // Handed to setImmediate once, wrapped; the next tick of the new wait spins.
    expect(calls).toHaveLength(1);
    const [[run]] = calls as [[() => void]];
    run();
    target.setImmediate(nativeUnnamed);
    expect(calls).toHaveLength(2);
    installed.undo();
  });

  it('installs once, and undoes only what it installed', () => {
    const { target, original, installed, buffer } = fakeTarget();
    const wrapped = Object.getPrototypeOf(buffer).mapAsync;
    const paced = target.setImmediate;
    expect(paced).not.toBe(original);
    const second = paceNativeTicks(target);
    expect(second.counts).toBe(installed.counts);
    expect(target.setImmediate).toBe(paced);
    second.undo();
    expect(target.setImmediate).toBe(paced);
    installed.undo();
    expect(target.setImmediate).toBe(original);
    expect(Object.getPrototypeOf(buffer).mapAsync).not.toBe(wrapped);
    expect(buffer.mapAsync(4)).toBe('mapped 4');
  });

  it('keeps util.promisify(setImmediate) resolving on the next turn', async () => {
    const target: PacingTarget = { setImmediate: globalThis.setImmediate };
    const { undo } = paceNativeTicks(target);
    try {
      await expect(promisify(target.setImmediate)('value')).resolves.toBe('value');
    } finally {
      undo();
    }
  });
});

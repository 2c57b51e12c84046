// dawn.node settles its promises (mapAsync, onSubmittedWorkDone, createComputePipelineAsync, …) by
// polling: while any is pending, a callback it passes to the global `setImmediate` ticks the device
// and queues itself again (AsyncRunner::QueueTick in Dawn's node binding; crbug.com/dawn/1127 notes
// the frequency). Node's event loop then never sleeps, so during a merge one core spins in the
// device's tick beside the GPU's own threads. On SwiftShader those threads are the GPU: on the
// 2-core VM a TIES merge of the bench's set spent about a third of its CPU in that loop.
//
// paceNativeTicks lets those ticks spin only for SPIN_MS after a wait begins (a small copy and map
// comes back within ~0.1 ms that way, as a real GPU's round trips do), then sends them through a
// TICK_MS timer. dawn.node's callback is a native function without a name (Napi::Function::New);
// everything else (a script's own callbacks, bound functions, named natives) keeps setImmediate as
// Node made it. A wait is marked as begun by the methods that start one (WAIT_METHODS), wrapped.

import { promisify } from 'node:util';

/** The environment variable that, set to 'spin', keeps dawn.node's own loop (for the A/B benches). */
export const DAWN_TICKS_ENV = 'MERGE_STUDIO_DAWN_TICKS';

/** Milliseconds between two of dawn.node's device ticks once a wait has spun for SPIN_MS. */
export const TICK_MS = 1;

/** Milliseconds a wait's ticks run back to back after it begins, before the timer paces them. */
export const SPIN_MS = 0.5;

/** The dawn.node methods whose promises start a wait, by class. */
export const WAIT_METHODS: Record<string, readonly string[]> = {
  GPUBuffer: ['mapAsync'],
  GPUQueue: ['onSubmittedWorkDone'],
  GPUDevice: ['popErrorScope', 'createComputePipelineAsync', 'createRenderPipelineAsync'],
};

type Immediate = typeof globalThis.setImmediate;

const PACED = Symbol.for('merge-studio.pacedImmediate');

/** dawn.node's tick callback: a native function with no name (a bound function is named "bound …"). */
export function isNativeTick(callback: unknown): boolean {
  return (
    typeof callback === 'function' &&
    callback.name === '' &&
    Function.prototype.toString.call(callback).includes('[native code]')
  );
}

/** Where the pacer installs itself: the global object, or a stand-in in tests. */
export interface PacingTarget {
  setImmediate: Immediate;
  [name: string]: unknown;
}

/** How dawn.node's ticks went since the pacer was installed: back to back, or on the timer. */
export interface PacingCounts {
  spun: number;
  paced: number;
}

/** The counts of the pacer installed on `target`, or null where none is. */
export function pacingCounts(
  target: PacingTarget = globalThis as unknown as PacingTarget,
): PacingCounts | null {
  return (target.setImmediate as { [PACED]?: PacingCounts })[PACED] ?? null;
}

/**
 * Installs the paced `setImmediate` on `target` (the global object by default, after dawn.node's
 * classes are on it) and wraps the WAIT_METHODS of the classes it finds there, once. Returns its
 * counts and what undoes both (for tests); a second call returns the first's counts and undoes nothing.
 */
export function paceNativeTicks(
  target: PacingTarget = globalThis as unknown as PacingTarget,
  now: () => number = () => performance.now(),
): { counts: PacingCounts; undo: () => void } {
  const installed = pacingCounts(target);
  if (installed) return { counts: installed, undo: () => {} };
  const current = target.setImmediate;
  const counts: PacingCounts = { spun: 0, paced: 0 };
  let waitBegan = -Infinity;
  /** The tick waiting on the timer: a wait that begins meanwhile runs it at once. */
  let timed: { timer: ReturnType<typeof setTimeout>; run: () => void } | null = null;
  const paced = function setImmediate(callback: (...args: unknown[]) => void, ...args: unknown[]) {
    if (!isNativeTick(callback)) return current(callback, ...args);
    if (now() - waitBegan < SPIN_MS) {
      counts.spun++;
      return current(callback, ...args);
    }
    counts.paced++;
    const run = (): void => {
      if (timed === entry) timed = null;
      callback(...args);
    };
    const entry = { timer: setTimeout(run, TICK_MS), run };
    timed = entry;
    return entry.timer;
  } as unknown as Immediate & { [PACED]?: PacingCounts };
  paced[PACED] = counts;
  // util.promisify(setImmediate) keeps resolving on the next turn, as Node's does.
  Object.defineProperty(paced, promisify.custom, { value: (current as never)[promisify.custom] });
  target.setImmediate = paced;
  const beginWait = (): void => {
    waitBegan = now();
    // dawn.node queues no tick while one is queued: the one on the timer runs now instead.
    if (timed) {
      const { timer, run } = timed;
      timed = null;
      clearTimeout(timer);
      current(run);
    }
  };
  const undo: (() => void)[] = [];
  for (const [name, methods] of Object.entries(WAIT_METHODS)) {
    const proto = (target[name] as { prototype?: Record<string, unknown> } | undefined)?.prototype;
    if (!proto) continue;
    for (const method of methods) {
      const original = proto[method];
      if (typeof original !== 'function') continue;
      proto[method] = function (this: unknown, ...args: unknown[]) {
        beginWait();
        return (original as (...a: unknown[]) => unknown).apply(this, args);
      };
      undo.push(() => (proto[method] = original));
    }
  }
  return {
    counts,
    undo: () => {
      if (target.setImmediate === paced) target.setImmediate = current;
      for (const restore of undo) restore();
    },
  };
}

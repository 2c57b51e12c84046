// dawn.node settles its promises (mapAsync, onSubmittedWorkDone, createComputePipelineAsync, …) by
// polling: while any is pending, a callback it passes to the global `setImmediate` ticks the device
// and queues itself again (AsyncRunner::QueueTick in Dawn's node binding; crbug.com/dawn/1127 notes
// the frequency). Node's event loop then never sleeps, so during a merge one core spins in the
// device's tick beside the GPU's own threads. On SwiftShader those threads are the GPU: on the
// 2-core VM a TIES merge of the bench's set spent about a third of its CPU in that loop.
//
// pacedImmediate sends those ticks through a 1 ms timer instead. dawn.node's callback is a native
// function without a name (Napi::Function::New); everything else (a script's own callbacks, bound
// functions, named natives) keeps setImmediate as Node made it. A promise then settles up to a
// millisecond after its work is done, which the driver's read-ahead and write-behind overlap.

import { promisify } from 'node:util';

/** Milliseconds between two of dawn.node's device ticks while a promise is pending. */
export const TICK_MS = 1;

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

/**
 * Installs the paced `setImmediate` on `target` (the global object by default) once; returns what
 * undoes it (for tests). A second call leaves the first in place and undoes nothing.
 */
export function paceNativeTicks(target: { setImmediate: Immediate } = globalThis): () => void {
  const current = target.setImmediate as Immediate & { [PACED]?: true };
  if (current[PACED]) return () => {};
  const paced = function setImmediate(callback: (...args: unknown[]) => void, ...args: unknown[]) {
    if (isNativeTick(callback)) return setTimeout(callback, TICK_MS, ...args);
    return current(callback, ...args);
  } as unknown as Immediate & { [PACED]?: true };
  paced[PACED] = true;
  // util.promisify(setImmediate) keeps resolving on the next turn, as Node's does.
  Object.defineProperty(paced, promisify.custom, { value: (current as never)[promisify.custom] });
  target.setImmediate = paced;
  return () => {
    if (target.setImmediate === paced) target.setImmediate = current;
  };
}

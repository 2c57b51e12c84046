// The worker's kept engine (warm-pool.ts): reused by the next job of the same key, destroyed before
// a job of another key makes its own, after a failed job, when its time runs out, or when let go; a
// job beside a running one gets its own, and one engine at most is ever kept.
import { describe, expect, it } from 'vitest';
import { WarmPool } from './warm-pool.ts';

class FakeEngine {
  destroyed = 0;
  constructor(readonly id: number) {}
  destroy(): void {
    this.destroyed++;
  }
}

/** A pool with a timer the test runs by hand, and every engine it made. */
function pool(keepMs = 1_000) {
  const made: FakeEngine[] = [];
  const timers = new Map<number, { run: () => void; ms: number }>();
  let next = 0;
  const warm = new WarmPool<FakeEngine>({
    keepMs,
    timer: {
      set: (run, ms) => {
        timers.set(++next, { run, ms });
        return next;
      },
      clear: (handle) => void timers.delete(handle as number),
    },
  });
  const make = async (): Promise<FakeEngine> => {
    const engine = new FakeEngine(made.length);
    made.push(engine);
    return engine;
  };
  /** Runs a job of `key` and says which engine it had and whether it was warm. */
  const job = (key: unknown[], body?: (e: FakeEngine) => Promise<void>) =>
    warm.use(key, make, async (engine, wasWarm) => {
      await body?.(engine);
      return { id: engine.id, warm: wasWarm, destroyedBefore: engine.destroyed };
    });
  /** Fires every pending timer, as their time running out would. */
  const expire = (): void => {
    for (const [handle, t] of [...timers]) {
      timers.delete(handle);
      t.run();
    }
  };
  return { warm, made, timers, job, expire };
}

describe('WarmPool', () => {
  it('gives the next job of the same key the engine the last one used, never a destroyed one', async () => {
    const p = pool();
    const device = {};
    expect(await p.job([device, 3])).toEqual({ id: 0, warm: false, destroyedBefore: 0 });
    expect(await p.job([device, 3])).toEqual({ id: 0, warm: true, destroyedBefore: 0 });
    expect(await p.job([device, 3])).toEqual({ id: 0, warm: true, destroyedBefore: 0 });
    expect(p.made).toHaveLength(1);
    expect(p.warm.holding).toBe(true);
  });

  it('destroys the kept engine before making one for another key (other agents, or a new device)', async () => {
    const p = pool();
    const device = {};
    await p.job([device, 3]);
    let keptWhenMade = -1;
    await p.warm.use(
      [device, 4],
      async () => {
        keptWhenMade = p.made[0]!.destroyed;
        const engine = new FakeEngine(1);
        p.made.push(engine);
        return engine;
      },
      async () => undefined,
    );
    expect(keptWhenMade).toBe(1);
    const other = await p.job([{}, 4]);
    expect(other).toEqual({ id: 2, warm: false, destroyedBefore: 0 });
    expect(p.made.map((e) => e.destroyed)).toEqual([1, 1, 0]);
  });

  it('destroys the engine of a job that fails, and the next job makes a new one', async () => {
    const p = pool();
    await p.job(['d', 3]);
    await expect(
      p.job(['d', 3], async () => {
        throw new Error('the merge failed');
      }),
    ).rejects.toThrow('the merge failed');
    expect(p.made[0]!.destroyed).toBe(1);
    expect(p.warm.holding).toBe(false);
    expect(await p.job(['d', 3])).toEqual({ id: 1, warm: false, destroyedBefore: 0 });
  });

  it('lets the engine go when its time runs out, or when released', async () => {
    const p = pool(60_000);
    await p.job(['d', 3]);
    expect([...p.timers.values()].map((t) => t.ms)).toEqual([60_000]);
    p.expire();
    expect(p.made[0]!.destroyed).toBe(1);
    expect(p.warm.holding).toBe(false);
    await p.job(['d', 3]);
    p.warm.release();
    expect(p.made[1]!.destroyed).toBe(1);
    expect(p.timers.size).toBe(0);
    // A timer of an engine taken again since does nothing.
    await p.job(['d', 3]);
    const stale = [...p.timers.values()][0]!;
    await p.job(['d', 3]);
    stale.run();
    expect(p.made[2]!.destroyed).toBe(0);
    expect(p.warm.holding).toBe(true);
  });

  it('gives a job beside a running one an engine of its own, and keeps one engine at most', async () => {
    const p = pool();
    await p.job(['d', 3]);
    let finishFirst = (): void => undefined;
    const first = p.job(['d', 3], () => new Promise<void>((resolve) => (finishFirst = resolve)));
    await Promise.resolve();
    const second = await p.job(['d', 3]);
    expect(second).toEqual({ id: 1, warm: false, destroyedBefore: 0 });
    finishFirst();
    expect(await first).toEqual({ id: 0, warm: true, destroyedBefore: 0 });
    // The one that finished last is kept; the other was destroyed.
    expect(p.made.map((e) => e.destroyed)).toEqual([0, 1]);
    expect(p.timers.size).toBe(1);
    expect(await p.job(['d', 3])).toEqual({ id: 0, warm: true, destroyedBefore: 0 });
  });
});

// One engine kept between the worker's jobs, for a while: a new GPU engine allocates its window
// buffers (hundreds of MiB that the device zeroes) and compiles its kernels, which took a studio merge
// of the 1.33 GiB bench set its first second (src/bench/studio.ts, 2026-12-06). A job whose engine is
// parked here starts at once. The pool holds one idle engine at most, for `keepMs` after its job: a
// job for other agents (another key) has the idle one destroyed before its own is made, so the two
// never hold memory together; a job that fails destroys its engine, whatever state its buffers are
// in; a job that starts while another runs gets an engine of its own, as before.

export interface Destroyable {
  destroy(): void;
}

export interface WarmPoolOptions {
  /** How long an idle engine is kept after its job, in milliseconds. */
  keepMs: number;
  /** Test aid: the timer (default setTimeout / clearTimeout). */
  timer?: {
    set(run: () => void, ms: number): unknown;
    clear(handle: unknown): void;
  };
}

/** Two keys are one where every part is the same (===): a device and an agent count, say. */
function sameKey(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((part, i) => part === b[i]);
}

export class WarmPool<E extends Destroyable> {
  private idle: { key: readonly unknown[]; engine: E; timer: unknown } | null = null;
  private readonly timer: NonNullable<WarmPoolOptions['timer']>;

  constructor(private readonly options: WarmPoolOptions) {
    this.timer = options.timer ?? {
      set: (run, ms) => setTimeout(run, ms),
      clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
    };
  }

  /** Whether an engine is parked. */
  get holding(): boolean {
    return this.idle !== null;
  }

  /**
   * Runs `run` with the parked engine of this key (warm: true), or else with a new one from `make`
   * (an idle engine of another key destroyed first). Parks the engine again once `run` resolves;
   * destroys it where `run` or `make` fails.
   */
  async use<T>(
    key: readonly unknown[],
    make: () => Promise<E>,
    run: (engine: E, warm: boolean) => Promise<T>,
  ): Promise<T> {
    let engine: E;
    let warm = false;
    const parked = this.take();
    if (parked && sameKey(parked.key, key)) {
      engine = parked.engine;
      warm = true;
    } else {
      parked?.engine.destroy();
      engine = await make();
    }
    let result: T;
    try {
      result = await run(engine, warm);
    } catch (error) {
      engine.destroy();
      throw error;
    }
    this.park(key, engine);
    return result;
  }

  /** Destroys the parked engine now (memory wanted back, or a test that measures idle memory). */
  release(): void {
    this.take()?.engine.destroy();
  }

  private take(): { key: readonly unknown[]; engine: E } | null {
    const parked = this.idle;
    if (!parked) return null;
    this.timer.clear(parked.timer);
    this.idle = null;
    return parked;
  }

  /** Parks `engine`: the newest is kept, so one that was parked meanwhile goes. */
  private park(key: readonly unknown[], engine: E): void {
    this.release();
    // Its own parking's timer alone lets it go (the same engine may be parked again meanwhile).
    const entry: { key: readonly unknown[]; engine: E; timer: unknown } = { key, engine, timer: null };
    entry.timer = this.timer.set(() => {
      if (this.idle === entry) this.release();
    }, this.options.keepMs);
    this.idle = entry;
  }
}

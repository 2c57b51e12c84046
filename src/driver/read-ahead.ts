// Reading ahead across tensors. The engine pipelines the windows of one tensor, but a model is mostly
// tensors of one window, so without this each tensor's reads waited for the previous tensor's
// compute, readback and write: the stages added up (on an H200 a RAM merge's did to its wall time, and
// in the studio the browser's File.slice reads came on top of SwiftShader's compute). While the engine
// merges tensor i, ReadAhead reads the first bytes of tensor i + 1 of every model; the engine's reads of
// that tensor then take them from memory. It holds one tensor's bytes at a time, at most `budget` in
// all: the next tensor is read ahead only once every byte held of this one has been handed over. The
// bytes go into one buffer per model, kept and reused: a fresh buffer per tensor left the garbage
// collector behind (a 1 GB CLI merge peaked at 411 MiB instead of 269 MiB). Browser Files are read
// into it too (src/io/browser.ts reads them into the caller's buffer).
import { must } from '../io/checked.ts';
import type { ByteSource } from '../io/source.ts';

/** Where one tensor's bytes lie in one model. */
export interface TensorBytes {
  source: ByteSource;
  offset: number;
  length: number;
}

/** Reads `length` bytes at byte `at` of the tensor in model `index` into `into` (at least that long). */
export type TensorReader = (index: number, at: number, length: number, into: Uint8Array) => Promise<void>;

export interface TensorReaders {
  read: TensorReader;
}

interface Held {
  bytes: Promise<Uint8Array>;
  length: number;
  /** Bytes handed over so far: the part is let go when every byte has been and no read is copying. */
  served: number;
  /** Reads of the engine copying from it now. */
  users: number;
}

/** Bytes read ahead of each of `models` models within `budget` (ReadAhead splits it evenly). */
export function readAheadShare(budget: number, models: number): number {
  return Math.floor(budget / Math.max(1, models));
}

export class ReadAhead {
  private ahead: { name: string; parts: (Held | undefined)[] } | null = null;
  /** The tensor whose reader was handed out last: only its release starts the next read-ahead. */
  private current: string | null = null;
  private readonly reads = new Set<Promise<unknown>>();
  /** Model k's buffer, and its last read: the next read into it waits for that one to settle. */
  private readonly pool: Uint8Array[] = [];
  private readonly filling: Promise<unknown>[] = [];
  /** Tensors whose first reads were served (partly) from memory: for tests and benchmarks. */
  hits = 0;

  /**
   * `locate(name)`: the tensor's bytes in every model (0 = base, t + 1 = agent t). `budget`: bytes
   * held at most (split evenly between the models); 0 reads nothing ahead.
   */
  constructor(
    private readonly locate: (name: string) => TensorBytes[],
    private readonly budget: number,
  ) {}

  /**
   * The readers of tensor `name`, serving what was read ahead of it; `next`, the tensor that will be
   * asked for after it, is read ahead once those bytes are handed over (at once if none were).
   */
  reader(name: string, next: string | undefined): TensorReaders {
    const located = this.locate(name);
    const parts = this.ahead?.name === name ? this.ahead.parts : [];
    this.ahead = null;
    this.current = name;
    let left = parts.filter((p) => p !== undefined).length;
    if (left > 0) this.hits += 1;
    else this.start(next);
    const where = (index: number): TensorBytes => must(located[index], `model ${index} of tensor ${name}`);
    /**
     * Hands `use` the held bytes of model `index` from byte `at` (at most `length`), synchronously
     * after they arrive, and lets the part go once all of it was handed over. Returns how many.
     */
    const serve = async (index: number, at: number, length: number, use: (held: Uint8Array) => void) => {
      const part = parts[index];
      if (!part || at >= part.length) return 0;
      const done = Math.min(length, part.length - at);
      part.users += 1;
      try {
        use((await part.bytes).subarray(at, at + done));
        part.served += done;
      } finally {
        part.users -= 1;
      }
      if (part.served >= part.length && part.users === 0 && parts[index] === part) {
        parts[index] = undefined;
        left -= 1;
        if (left === 0 && this.current === name) this.start(next);
      }
      return done;
    };
    const read: TensorReader = async (index, at, length, into) => {
      const done = await serve(index, at, length, (held) => into.set(held));
      const { source, offset } = where(index);
      if (done < length) await source.read(offset + at + done, length - done, into.subarray(done, length));
    };
    return { read };
  }

  /** Settles when no read started ahead is still running (their results are not needed). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.reads]);
  }

  private start(name: string | undefined): void {
    if (name === undefined || this.budget <= 0) return;
    const located = this.locate(name);
    const each = readAheadShare(this.budget, located.length);
    if (each === 0) return;
    const parts = located.map((where, k): Held | undefined => {
      const length = Math.min(each, where.length);
      if (length === 0) return undefined;
      const bytes = (this.filling[k] ?? Promise.resolve()).then(() =>
        where.source.read(where.offset, length, this.buffer(k, length)),
      );
      // A failed read is reported by the engine's read of those bytes, if it comes.
      const settled = bytes.then(noop, noop);
      this.filling[k] = settled;
      this.reads.add(settled);
      void settled.then(() => this.reads.delete(settled));
      return { bytes, length, served: 0, users: 0 };
    });
    this.ahead = { name, parts };
  }

  /** Model k's buffer, at least `length` long. */
  private buffer(k: number, length: number): Uint8Array {
    let buffer = this.pool[k];
    if (!buffer || buffer.length < length) {
      buffer = new Uint8Array(length);
      this.pool[k] = buffer;
    }
    return buffer;
  }
}

function noop(): void {}

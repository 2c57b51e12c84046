// ReadAhead: what the engine reads through it equals the files, whatever the budget, window size,
// pass count and read order; the next tensor is read ahead only once this one's held bytes are handed
// over; a failed read ahead is reported by the read that needed it, and by nothing else.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SafetensorsError } from '../io/errors.ts';
import { memorySource, type ByteSource } from '../io/source.ts';
import { ReadAhead, type TensorBytes } from './read-ahead.ts';

interface Logged {
  source: string;
  offset: number;
  length: number;
  /** Whether the read was the engine's (into one of its buffers), not ReadAhead's. */
  into: boolean;
  /** Whether it came with a buffer at all. */
  given?: boolean;
}

/** The buffers the simulated engines below read into. */
const engineBuffers = new WeakSet<ArrayBufferLike>();

function engineBuffer(length: number): Uint8Array {
  const buffer = new Uint8Array(length);
  engineBuffers.add(buffer.buffer);
  return buffer;
}

/** A source that logs every read, and whose reads can be held until released. */
function loggedSource(name: string, bytes: Uint8Array, log: Logged[], gate?: Promise<void>): ByteSource {
  const inner = memorySource(name, bytes);
  return {
    name,
    size: bytes.length,
    async read(offset, length, into) {
      const engine = into !== undefined && engineBuffers.has(into.buffer);
      log.push({ source: name, offset, length, into: engine, ...(into && !engine ? { given: true } : {}) });
      if (gate) await gate;
      return inner.read(offset, length, into);
    },
  };
}

/** `models` files of random bytes, each holding the tensors of `lengths` back to back after a header. */
function files(models: number, lengths: readonly number[], seed: number): Uint8Array[] {
  let state = seed >>> 0 || 1;
  const total = 8 + lengths.reduce((a, b) => a + b, 0);
  return Array.from({ length: models }, () =>
    Uint8Array.from({ length: total }, () => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return state >>> 24;
    }),
  );
}

/** Lets reads that were started run up to their first await. */
const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

function locator(sources: ByteSource[], lengths: readonly number[]): (name: string) => TensorBytes[] {
  return (name) => {
    const i = Number(name.slice(1));
    const offset = 8 + lengths.slice(0, i).reduce((a, b) => a + b, 0);
    return sources.map((source) => ({ source, offset, length: lengths[i]! }));
  };
}

describe('ReadAhead', () => {
  it('hands the engine the files’ bytes for any budget, window, pass count and read order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 2000 }),
        fc.integer({ min: 1, max: 128 }),
        fc.integer({ min: 1, max: 3 }),
        fc.boolean(),
        fc.integer(),
        async (models, lengths, budget, window, passes, backwards, seed) => {
          const data = files(models, lengths, seed);
          const log: Logged[] = [];
          const sources = data.map((bytes, k) => loggedSource(`m${k}`, bytes, log));
          const locate = locator(sources, lengths);
          const ahead = new ReadAhead(locate, budget);
          const names = lengths.map((_, i) => `t${i}`);
          for (const [i, name] of names.entries()) {
            const readers = ahead.reader(name, names[i + 1]);
            const where = locate(name);
            for (let pass = 0; pass < passes; pass += 1) {
              const starts: number[] = [];
              for (let at = 0; at < lengths[i]!; at += window) starts.push(at);
              if (backwards && pass === 0) starts.reverse();
              for (const at of starts) {
                // The first pass of every other tensor skips the base, as some GPU passes do.
                for (let k = pass === 0 && i % 2 === 1 ? 1 : 0; k < models; k += 1) {
                  const length = Math.min(window, lengths[i]! - at);
                  const offset = where[k]!.offset + at;
                  const want = data[k]!.subarray(offset, offset + length);
                  const into = engineBuffer(length + 3).fill(0xee);
                  await readers.read(k, at, length, into);
                  expect(into.subarray(0, length)).toEqual(want);
                  expect(into.subarray(length)).toEqual(new Uint8Array(3).fill(0xee));
                }
              }
            }
          }
          await ahead.settled();
          // ReadAhead's own reads: never more than its share of the budget per model, never past a tensor.
          const each = Math.floor(budget / models);
          for (const r of log.filter((l) => !l.into)) expect(r.length).toBeLessThanOrEqual(each);
          if (budget < models) expect(log.filter((l) => !l.into)).toEqual([]);
          // Every read ahead lands in the pool, never in a buffer of the source's making.
          expect(log.filter((l) => !l.into && !l.given)).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads the next tensor while this one is merged, and serves its first read from memory', async () => {
    const lengths = [64, 64, 64];
    const data = files(2, lengths, 7);
    const log: Logged[] = [];
    const sources = data.map((bytes, k) => loggedSource(`m${k}`, bytes, log));
    const ahead = new ReadAhead(locator(sources, lengths), 1024);

    const first = ahead.reader('t0', 't1').read;
    await tick();
    // Nothing was held for t0, so t1 is read ahead at once, before the engine asks for anything.
    expect(log).toEqual([
      { source: 'm0', offset: 72, length: 64, into: false, given: true },
      { source: 'm1', offset: 72, length: 64, into: false, given: true },
    ]);
    for (const k of [0, 1]) await first(k, 0, 64, engineBuffer(64));
    expect(log.filter((l) => l.into)).toHaveLength(2);

    log.length = 0;
    const second = ahead.reader('t1', 't2').read;
    await tick();
    // t1's bytes are held: t2 waits until they are handed over (the budget holds one tensor).
    expect(log).toEqual([]);
    const into = engineBuffer(64);
    await second(0, 0, 32, into);
    expect(log).toEqual([]);
    await second(0, 32, 32, into.subarray(32));
    expect(into).toEqual(data[0]!.subarray(72, 136));
    expect(log).toEqual([]);
    await second(1, 0, 64, into);
    await tick();
    // Every held byte of t1 handed over: t2 is read ahead now, and no engine read reached a file.
    expect(log).toEqual([
      { source: 'm0', offset: 136, length: 64, into: false, given: true },
      { source: 'm1', offset: 136, length: 64, into: false, given: true },
    ]);
    expect(ahead.hits).toBe(1);
    await ahead.settled();
  });

  it('reads ahead only the first bytes of a tensor larger than its share, and the rest from the file', async () => {
    const lengths = [10, 100];
    const data = files(2, lengths, 3);
    const log: Logged[] = [];
    const ahead = new ReadAhead(
      locator(
        data.map((bytes, k) => loggedSource(`m${k}`, bytes, log)),
        lengths,
      ),
      60,
    );
    ahead.reader('t0', 't1');
    await tick();
    expect(log.map((l) => [l.offset, l.length])).toEqual([
      [18, 30],
      [18, 30],
    ]);
    log.length = 0;
    const read = ahead.reader('t1', undefined).read;
    const into = engineBuffer(50);
    await read(1, 10, 50, into);
    expect(into).toEqual(data[1]!.subarray(28, 78));
    // 20 bytes came from memory, the 30 past the held part from the file.
    expect(log).toEqual([{ source: 'm1', offset: 48, length: 30, into: true }]);
  });

  it('reports a failed read ahead through the read that needs it, naming the file, and nowhere else', async () => {
    const lengths = [16, 16];
    const data = files(2, lengths, 5);
    const broken: ByteSource = {
      name: 'agent.safetensors',
      size: data[1]!.length,
      read: async (offset, length) => {
        throw new SafetensorsError('ReadFailed', 'agent.safetensors', `bytes ${offset}..${offset + length}`);
      },
    };
    const unhandled: unknown[] = [];
    const record = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      const locate = locator([memorySource('base', data[0]!), broken], lengths);
      // Read ahead but never needed: no error anywhere.
      new ReadAhead(locate, 64).reader('t0', 't1');
      const ahead = new ReadAhead(locate, 64);
      ahead.reader('t0', 't1');
      const read = ahead.reader('t1', undefined).read;
      const into = new Uint8Array(16);
      await read(0, 0, 16, into);
      expect(into).toEqual(data[0]!.subarray(24, 40));
      await expect(read(1, 0, 16, into)).rejects.toThrow(/agent\.safetensors/);
      await ahead.settled();
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', record);
    }
  });

  it('reuses one buffer per model, never while a read into it is running', async () => {
    const lengths = [8, 8, 8, 8];
    const data = files(1, lengths, 11);
    let release!: () => void;
    let gate: Promise<void> | undefined = new Promise<void>((resolve) => (release = resolve));
    const log: Logged[] = [];
    const inner = memorySource('m0', data[0]!);
    const source: ByteSource = {
      name: 'm0',
      size: data[0]!.length,
      async read(offset, length, into) {
        log.push({
          source: 'm0',
          offset,
          length,
          into: into !== undefined && engineBuffers.has(into.buffer),
        });
        if (gate) await gate;
        return inner.read(offset, length, into);
      },
    };
    const ahead = new ReadAhead(locator([source], lengths), 64);
    ahead.reader('t0', 't1');
    // t1's read ahead is still running when the engine skips to t2: t3's must wait for it.
    const read = ahead.reader('t2', 't3').read;
    await tick();
    expect(log.map((l) => l.offset)).toEqual([16]);
    gate = undefined;
    release();
    await tick();
    expect(log.map((l) => l.offset)).toEqual([16, 32]);
    const into = engineBuffer(8);
    await read(0, 0, 8, into);
    expect(into).toEqual(data[0]!.subarray(24, 32));

    // Two engine reads of t3's held bytes at once, the first one ending the part: both get them.
    const t3 = ahead.reader('t3', undefined).read;
    const [a, b] = [engineBuffer(8), engineBuffer(4)];
    await Promise.all([t3(0, 0, 8, a), t3(0, 4, 4, b)]);
    expect(a).toEqual(data[0]!.subarray(32, 40));
    expect(b).toEqual(data[0]!.subarray(36, 40));
  });

  it('settled() waits for reads still running ahead', async () => {
    const lengths = [8, 8];
    const data = files(1, lengths, 9);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const log: Logged[] = [];
    const ahead = new ReadAhead(locator([loggedSource('m0', data[0]!, log, gate)], lengths), 64);
    ahead.reader('t0', 't1');
    let done = false;
    const settling = ahead.settled().then(() => (done = true));
    await tick();
    expect(done).toBe(false);
    release();
    await settling;
    expect(done).toBe(true);
  });
});

// writeBehind: chunks reach the sink whole and in order, one write at a time, never more than the limit
// queued when write() returns; a failed write fails the caller's next call, and close() and abort()
// wait for the queue.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { at } from './checked.ts';
import { concatBytes, writeBehind, type ByteSink } from './sink.ts';

/** A sink whose writes each take `delay(i)` milliseconds and whose calls are logged. */
function slowSink(delay: (i: number) => number, fail?: number) {
  const chunks: Uint8Array[] = [];
  const calls: string[] = [];
  let running = 0;
  let most = 0;
  let done = 0;
  const sink: ByteSink = {
    async write(chunk) {
      const i = calls.length;
      calls.push(`write ${chunk.length}`);
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, delay(i)));
      running -= 1;
      if (i === fail) throw new Error(`disk full at chunk ${i}`);
      chunks.push(chunk.slice());
      done += chunk.length;
    },
    async close() {
      calls.push('close');
    },
    async abort() {
      calls.push('abort');
    },
  };
  return {
    sink,
    chunks,
    calls,
    most: () => most,
    written: () => done,
  };
}

describe('writeBehind', () => {
  it('writes every chunk in order, one at a time, with at most the limit queued', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 0, maxLength: 40 }), { maxLength: 12 }),
        fc.integer({ min: 0, max: 100 }),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 12, maxLength: 12 }),
        async (input, limit, delays) => {
          const target = slowSink((i) => at(delays, i % delays.length, 'delay'));
          const sink = writeBehind(target.sink, limit);
          let handed = 0;
          for (const chunk of input) {
            await sink.write(chunk);
            handed += chunk.length;
            expect(handed - target.written()).toBeLessThanOrEqual(limit);
          }
          await sink.close();
          expect(concatBytes(target.chunks)).toEqual(concatBytes(input));
          expect(target.calls.at(-1)).toBe('close');
          expect(target.most()).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('returns from write() while the file system is still writing', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const chunks: number[] = [];
    const sink = writeBehind(
      {
        write: async (chunk) => {
          await gate;
          chunks.push(chunk.length);
        },
        close: async () => undefined,
        abort: async () => undefined,
      },
      100,
    );
    await sink.write(new Uint8Array(60));
    expect(chunks).toEqual([]);
    // 60 + 60 queued is over the limit: this one waits until the first is written.
    let second = false;
    const writing = sink.write(new Uint8Array(60)).then(() => (second = true));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(second).toBe(false);
    release();
    await writing;
    expect(chunks.length).toBeGreaterThanOrEqual(1);
    await sink.close();
    expect(chunks).toEqual([60, 60]);
  });

  it('fails the next call with a failed write’s error and writes nothing queued after it', async () => {
    const target = slowSink(() => 2, 1);
    const sink = writeBehind(target.sink, 1000);
    await sink.write(Uint8Array.from([1]));
    await sink.write(Uint8Array.from([2, 2]));
    await sink.write(Uint8Array.from([3, 3, 3]));
    await expect(sink.close()).rejects.toThrow('disk full at chunk 1');
    expect(target.calls).toEqual(['write 1', 'write 2']);
    await expect(sink.write(Uint8Array.from([4]))).rejects.toThrow('disk full at chunk 1');
    await sink.abort();
    expect(target.calls).toEqual(['write 1', 'write 2', 'abort']);
  });

  it('aborts only after the writes in flight have settled', async () => {
    const target = slowSink(() => 5);
    const sink = writeBehind(target.sink, 1000);
    await sink.write(Uint8Array.from([1, 1]));
    await sink.write(Uint8Array.from([2]));
    await sink.abort();
    expect(target.calls).toEqual(['write 2', 'write 1', 'abort']);
  });
});

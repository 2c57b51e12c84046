// writeBehind: chunks reach the sink whole and in order, one write at a time, never more than the limit
// queued when write() returns; a failed write fails the caller's next call, and close() and abort()
// wait for the queue.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { at } from './checked.ts';
import { ChunkPool, concatBytes, writeBehind, type ByteSink } from './sink.ts';

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
          // Chunks of 8 bytes and more are queued in the pool's reused memory.
          const sink = writeBehind(target.sink, limit, new ChunkPool(limit, 8));
          const expected = concatBytes(input);
          let handed = 0;
          for (const chunk of input) {
            await sink.write(chunk);
            // The caller's chunk is its own again once write() resolves.
            chunk.fill(0xee);
            handed += chunk.length;
            expect(handed - target.written()).toBeLessThanOrEqual(limit);
          }
          await sink.close();
          expect(concatBytes(target.chunks)).toEqual(expected);
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

  it('queues chunks in reused memory, kept within its bound', async () => {
    const seen = new Set<ArrayBufferLike>();
    const chunks: Uint8Array[] = [];
    const sink = writeBehind(
      {
        write: async (chunk) => {
          seen.add(chunk.buffer);
          await new Promise((resolve) => setTimeout(resolve, 1));
          chunks.push(chunk.slice());
        },
        close: async () => undefined,
        abort: async () => undefined,
      },
      3 << 16,
      new ChunkPool(3 << 16),
    );
    const random = new Uint8Array(40 << 16);
    for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 24;
    // 40 chunks of 64 KiB with at most 3 queued: a handful of buffers serve them all.
    for (let i = 0; i < 40; i++) await sink.write(random.subarray(i << 16, (i + 1) << 16));
    await sink.close();
    expect(Buffer.compare(concatBytes(chunks), random)).toBe(0);
    expect(seen.size).toBeGreaterThan(1);
    expect(seen.size).toBeLessThanOrEqual(4);
  });

  it('writes a chunk over the limit from the caller’s memory, done when write() resolves', async () => {
    const received: Uint8Array[] = [];
    const sink = writeBehind(
      {
        write: async (chunk) => {
          await new Promise((resolve) => setTimeout(resolve, 2));
          received.push(chunk);
        },
        close: async () => undefined,
        abort: async () => undefined,
      },
      100,
    );
    const big = new Uint8Array(101).fill(7);
    await sink.write(big);
    expect(received).toEqual([big]);
    expect(received[0]).toBe(big);
    await sink.close();
  });
});

describe('ChunkPool', () => {
  it('gives a free buffer to a chunk at most half its size, and keeps only its bound', () => {
    const pool = new ChunkPool(100, 4);
    const a = pool.copy(new Uint8Array(80).fill(1));
    expect(a.bytes.length).toBe(80);
    pool.give(a.buffer);
    // 80 bytes serve a 40-byte chunk, not a 39-byte one.
    const b = pool.copy(new Uint8Array(39).fill(2));
    expect(b.buffer).not.toBe(a.buffer);
    const c = pool.copy(new Uint8Array(40).fill(3));
    expect(c.buffer).toBe(a.buffer);
    expect([...c.bytes]).toEqual(new Array(40).fill(3));
    expect(pool.allocated).toBe(2);
    // Free memory stays within keep (100) plus the largest buffer (80): of three more, the third goes.
    const held = [
      pool.copy(new Uint8Array(80)),
      pool.copy(new Uint8Array(80)),
      pool.copy(new Uint8Array(80)),
    ];
    expect(pool.allocated).toBe(5);
    for (const h of held) pool.give(h.buffer);
    const again = [
      pool.copy(new Uint8Array(80)),
      pool.copy(new Uint8Array(80)),
      pool.copy(new Uint8Array(80)),
    ];
    expect(pool.allocated).toBe(6);
    expect(new Set(again.slice(0, 2).map((h) => h.buffer))).toEqual(
      new Set(held.slice(0, 2).map((h) => h.buffer)),
    );
    // Small chunks are plain copies.
    const small = pool.copy(Uint8Array.from([9, 9]));
    expect(small.buffer).toBeNull();
    expect([...small.bytes]).toEqual([9, 9]);
  });
});

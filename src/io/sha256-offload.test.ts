// HashOffload and serveHashPort over Node's MessageChannel (the two ends of the studio's engine worker
// and its hash worker): digests equal Node's SHA-256 of the same bytes for any chunking and any
// interleaving of streams, chunks may be reused as soon as update() settles, no more than the limit
// is out at a time, chunks keep their order unawaited, and a failing worker fails every stream with
// its message.
import { createHash } from 'node:crypto';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { at } from './checked.ts';
import {
  HashOffload,
  serveHashPort,
  type HashPort,
  type HashReply,
  type HashRequest,
} from './sha256-offload.ts';

const ports: MessagePort[] = [];
afterEach(() => {
  for (const port of ports.splice(0)) port.close();
});

/** An offload whose worker side runs on the other end of a channel, `spy` seeing every request. */
function channel(
  limit?: number,
  spy?: (request: HashRequest) => void,
  ready: Promise<unknown> = Promise.resolve(),
) {
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  const worker = port2 as unknown as HashPort<HashRequest, HashReply>;
  serveHashPort(worker, ready);
  if (spy) {
    const serve = worker.onmessage;
    worker.onmessage = (event) => {
      spy(event.data);
      serve?.(event);
    };
  }
  return new HashOffload(port1 as unknown as HashPort<HashReply, HashRequest>, limit);
}

const sha256 = (chunks: readonly Uint8Array[]): string => {
  const hash = createHash('sha256');
  for (const chunk of chunks) hash.update(chunk);
  return hash.digest('hex');
};

describe('HashOffload', () => {
  it('digests what Node digests, for any chunks, interleaved streams and reused chunk memory', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.uint8Array({ maxLength: 3000 }), { maxLength: 8 }), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.integer({ min: 1, max: 8192 }),
        async (streams, limit) => {
          const offload = channel(limit);
          const hashes = streams.map(() => offload.stream());
          const scratch = new Uint8Array(3000);
          // Round robin over the streams; each chunk handed over from one scratch, overwritten after.
          for (let i = 0; i < Math.max(...streams.map((s) => s.length)); i++)
            for (const [k, chunks] of streams.entries()) {
              const chunk = chunks[i];
              if (!chunk) continue;
              scratch.set(chunk);
              await at(hashes, k, 'hash streams').update(scratch.subarray(0, chunk.length));
              scratch.fill(0xa5);
            }
          const digests = await Promise.all(hashes.map((h) => h.hex()));
          expect(digests).toEqual(streams.map(sha256));
          expect(offload.backend).toBe('node');
        },
      ),
      { numRuns: 60 },
    );
  });

  it('keeps at most the limit out and waits for buffers to come back', async () => {
    const sizes: number[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const offload = channel(256 << 10, (r) => r.type === 'update' && sizes.push(r.buffer.byteLength), gate);
    const stream = offload.stream();
    const chunks = Array.from({ length: 40 }, (_, i) => new Uint8Array(64 << 10).fill(i));
    // The worker side holds everything until the gate opens: four chunks fit, the fifth waits.
    const sent: Promise<void>[] = [];
    for (const chunk of chunks.slice(0, 5)) sent.push(Promise.resolve(stream.update(chunk)));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sizes.length).toBe(4);
    let fifth = false;
    void at(sent, 4, 'updates sent').then(() => (fifth = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fifth).toBe(false);
    release();
    await Promise.all(sent);
    for (const chunk of chunks.slice(5)) await stream.update(chunk);
    expect(await stream.hex()).toBe(sha256(chunks));
    expect(sizes.length).toBe(40);
    expect(Math.max(...sizes)).toBe(64 << 10);
  });

  it('keeps each stream’s chunks in order when updates are not waited for one by one', async () => {
    const offload = channel(256 << 10);
    const stream = offload.stream();
    const chunks = Array.from({ length: 60 }, (_, i) => new Uint8Array((40 + (i % 7) * 10) << 10).fill(i));
    const sent: unknown[] = [];
    for (const [i, chunk] of chunks.entries()) {
      sent.push(stream.update(chunk));
      // Now and then a pause, in which buffers come back and waiting updates wake.
      if (i % 4 === 2) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    // The digest asked for at once covers the chunks still queued.
    expect(await stream.hex()).toBe(sha256(chunks));
    await Promise.all(sent);
  });

  it('makes a chunk larger than the limit in one buffer, and sends nothing for an empty one', async () => {
    const requests: HashRequest[] = [];
    const offload = channel(1024, (r) => requests.push(r));
    const stream = offload.stream();
    const big = Uint8Array.from({ length: 5000 }, (_, i) => i * 7);
    await stream.update(big);
    await stream.update(new Uint8Array(0));
    expect(await stream.hex()).toBe(sha256([big]));
    expect(requests.map((r) => r.type)).toEqual(['update', 'digest']);
  });

  it('fails every stream, pending or later, once the worker fails, naming its message', async () => {
    const offload = channel(1 << 20);
    const stream = offload.stream();
    await stream.update(new Uint8Array(10));
    const pending = stream.hex();
    expect(offload.failed).toBe(false);
    offload.fail(new Error('the shard hash worker failed: boom'));
    expect(offload.failed).toBe(true);
    await expect(pending).rejects.toThrow('the shard hash worker failed: boom');
    const later = offload.stream();
    await expect(Promise.resolve().then(() => later.update(new Uint8Array(4)))).rejects.toThrow('boom');
  });

  it('reports a failure on the worker side as a failed merge, not a wrong digest', async () => {
    const { port1, port2 } = new MessageChannel();
    ports.push(port1, port2);
    const worker = port2 as unknown as HashPort<HashRequest, HashReply>;
    serveHashPort(worker, Promise.resolve());
    // A request the worker cannot serve: an update whose length exceeds its buffer.
    const offload = new HashOffload(port1 as unknown as HashPort<HashReply, HashRequest>);
    let told = 0;
    offload.onFail = () => told++;
    const stream = offload.stream();
    port1.postMessage({
      type: 'update',
      id: 99,
      buffer: new ArrayBuffer(4),
      length: 8,
    } satisfies HashRequest);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await expect(Promise.resolve().then(() => stream.update(new Uint8Array(4)))).rejects.toThrow(
      /hashing the shards failed/,
    );
    expect(offload.failed).toBe(true);
    // Its owner terminates the worker there (worker-merge.ts).
    expect(told).toBe(1);
  });

  it('tells its owner once, however often it is failed', async () => {
    const told: string[] = [];
    const offload = channel(1 << 20);
    offload.onFail = (error) => told.push(error.message);
    const stream = offload.stream();
    await stream.update(new Uint8Array(10));
    expect(told).toEqual([]);
    offload.fail(new Error('the shard hash worker failed: boom'));
    offload.fail(new Error('a second failure'));
    expect(told).toEqual(['the shard hash worker failed: boom']);
  });

  it('lets a dropped stream go on the worker side, and a stream ends with its digest', async () => {
    const requests: HashRequest[] = [];
    const offload = channel(1 << 20, (r) => requests.push(r));
    const dropped = offload.stream();
    await dropped.update(new Uint8Array(3));
    dropped.drop?.();
    const kept = offload.stream();
    await kept.update(new Uint8Array([1, 2, 3]));
    expect(await kept.hex()).toBe(sha256([new Uint8Array([1, 2, 3])]));
    expect(requests.map((r) => r.type)).toEqual(['update', 'drop', 'update', 'digest']);
    expect(() => kept.update(new Uint8Array(1))).toThrow('ended');
  });
});

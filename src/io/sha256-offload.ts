// SHA-256 of the shards a merge writes, computed on a thread of its own. The studio's engine worker
// hashed each shard as it wrote it, in WebAssembly at ~360 MB/s: a quarter of that thread's CPU time
// in a RAM merge of the 1.33 GiB benchmark set (1.0 of 3.8 s), on the thread that also reads, uploads and
// writes, so on a machine with cores to spare it bounded the merge's throughput. Here each chunk is
// copied into a buffer of a ChunkPool (memory touched before: see there) and transferred to a hash
// worker (src/worker/hash-worker.ts), which hashes the streams in the order their chunks came and
// transfers each buffer back. At most
// `limit` bytes are out at a time: past that update() waits for buffers to come back, so a hash that
// falls behind holds up the merge rather than memory. Both sides are here, platform-free, over a
// MessagePort-like HashPort, so that Node's MessageChannel can test them.
import { Sha256, sha256Backend, type Sha256Backend } from './sha256.ts';
import { ChunkPool } from './sink.ts';

/** A streaming SHA-256 the merge driver feeds a shard's bytes: Sha256, or a stream of a HashOffload. */
export interface StreamHash {
  /** Hashes `chunk` next; the chunk may be reused once this returns (or its promise settles). */
  update(chunk: Uint8Array): void | Promise<void>;
  /** The hex digest of every chunk given, in order. */
  hex(): string | Promise<string>;
  /** Lets the stream go without a digest (its shard failed). */
  drop?(): void;
}

/** Messages to the hash worker: chunks of stream `id` in order, then its digest or its drop. */
export type HashRequest =
  | { type: 'update'; id: number; buffer: ArrayBuffer; length: number }
  | { type: 'digest'; id: number }
  | { type: 'drop'; id: number };

/** Messages back: each update's buffer, each digest (with the backend that computed it), a failure. */
export type HashReply =
  | { type: 'returned'; buffer: ArrayBuffer }
  | { type: 'digest'; id: number; hex: string; backend: Sha256Backend }
  | { type: 'failed'; message: string };

/** The part of a MessagePort (or a Worker, or a worker's global scope) either side uses. */
export interface HashPort<In, Out> {
  postMessage(message: Out, transfer?: Transferable[]): void;
  onmessage: ((event: { data: In }) => void) | null;
}

/**
 * The bytes out to the hash worker at most, by default: two 16 MiB windows of bf16 output. Free
 * buffers are kept up to the largest one, so a HashOffload holds at most this plus its largest chunk.
 */
export const HASH_OFFLOAD_BYTES = 32 << 20;

/**
 * The main side: streams whose chunks go to one hash worker. Once the worker failed (a 'failed' reply,
 * or fail() from the worker's error event) every call of every stream rejects with that failure.
 */
export class HashOffload {
  private nextId = 1;
  /** Bytes of the buffers now with the worker. */
  private out = 0;
  private readonly pool: ChunkPool;
  private readonly waiting: (() => void)[] = [];
  private readonly digests = new Map<
    number,
    { resolve: (hex: string) => void; reject: (e: Error) => void }
  >();
  private failure: Error | null = null;
  /** The backend the worker said it hashed with, once a digest came back. */
  backend: Sha256Backend | null = null;
  /** Told once, when the worker fails either way: its owner lets the worker go there. */
  onFail: ((error: Error) => void) | null = null;

  constructor(
    private readonly port: HashPort<HashReply, HashRequest>,
    private readonly limit = HASH_OFFLOAD_BYTES,
  ) {
    this.pool = new ChunkPool(0);
    port.onmessage = ({ data }) => this.receive(data);
  }

  /** A new stream. */
  stream(): StreamHash {
    const id = this.nextId++;
    let done = false;
    // An update still waiting for room: later ones queue behind it, so chunks keep their order even
    // where a caller does not wait for each update before the next.
    let queued: Promise<void> | null = null;
    return {
      update: (chunk) => {
        if (done) throw new Error('this hash stream has ended');
        if (!queued && this.fits(chunk.byteLength)) return this.send(id, chunk);
        const next = (queued ?? Promise.resolve()).then(() => this.update(id, chunk));
        queued = next;
        const settle = (): void => {
          if (queued === next) queued = null;
        };
        next.then(settle, settle);
        return next;
      },
      hex: () => {
        if (done) throw new Error('this hash stream has ended');
        done = true;
        // After the updates still queued, whose chunks it covers.
        return queued ? queued.then(() => this.digest(id)) : this.digest(id);
      },
      drop: () => {
        if (done) return;
        done = true;
        if (!this.failure) this.port.postMessage({ type: 'drop', id });
      },
    };
  }

  /** Fails every stream: calls waiting now and every later one reject with `error`. */
  fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const wake of this.waiting.splice(0)) wake();
    for (const pending of this.digests.values()) pending.reject(error);
    this.digests.clear();
    this.onFail?.(error);
  }

  /** Whether the worker failed (every call now rejects). */
  get failed(): boolean {
    return this.failure !== null;
  }

  private check(): void {
    if (this.failure) throw this.failure;
  }

  /** Whether `length` more bytes may go out now (always where none are out). */
  private fits(length: number): boolean {
    return this.out === 0 || this.out + length <= this.limit;
  }

  /** Sends `chunk` once it fits. */
  private async update(id: number, chunk: Uint8Array): Promise<void> {
    this.check();
    while (!this.fits(chunk.byteLength)) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
      this.check();
    }
    this.send(id, chunk);
  }

  /** Copies `chunk` into the pool's memory and transfers that to the worker. */
  private send(id: number, chunk: Uint8Array): void {
    this.check();
    if (chunk.byteLength === 0) return;
    const { bytes } = this.pool.copy(chunk);
    const buffer = bytes.buffer as ArrayBuffer;
    this.out += buffer.byteLength;
    this.port.postMessage({ type: 'update', id, buffer, length: chunk.byteLength }, [buffer]);
  }

  private digest(id: number): Promise<string> {
    this.check();
    return new Promise<string>((resolve, reject) => {
      this.digests.set(id, { resolve, reject });
      this.port.postMessage({ type: 'digest', id });
    });
  }

  private receive(reply: HashReply): void {
    if (reply.type === 'returned') {
      this.out -= reply.buffer.byteLength;
      // The pool's buffers go back to it (a small chunk's copy was new memory, its own).
      if (!this.failure && reply.buffer.byteLength >= this.pool.small)
        this.pool.give(new Uint8Array(reply.buffer));
      this.waiting.shift()?.();
    } else if (reply.type === 'digest') {
      this.backend = reply.backend;
      const pending = this.digests.get(reply.id);
      this.digests.delete(reply.id);
      pending?.resolve(reply.hex);
    } else this.fail(new Error(`hashing the shards failed: ${reply.message}`));
  }
}

/**
 * The worker side: hashes each stream's chunks in the order they come (after `ready`, which loads
 * the backend) and sends each buffer back; a failure is reported and ends the service.
 */
export function serveHashPort(port: HashPort<HashRequest, HashReply>, ready: Promise<unknown>): void {
  const streams = new Map<number, Sha256>();
  let chain: Promise<unknown> = ready.catch(() => undefined);
  let failed = false;
  const handle = (request: HashRequest): void => {
    if (failed) return;
    try {
      if (request.type === 'update') {
        let hash = streams.get(request.id);
        if (!hash) streams.set(request.id, (hash = new Sha256()));
        hash.update(new Uint8Array(request.buffer, 0, request.length));
        port.postMessage({ type: 'returned', buffer: request.buffer }, [request.buffer]);
      } else if (request.type === 'digest') {
        const hex = (streams.get(request.id) ?? new Sha256()).hex();
        streams.delete(request.id);
        port.postMessage({ type: 'digest', id: request.id, hex, backend: sha256Backend() });
      } else streams.delete(request.id);
    } catch (error) {
      failed = true;
      port.postMessage({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    }
  };
  port.onmessage = ({ data }) => {
    chain = chain.then(() => handle(data));
  };
}

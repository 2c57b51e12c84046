// The browser sources and folders, run in Node: blobSource over Node's Blob/File, and
// directoryHandleFolder over a small in-memory stand-in with the File System API's semantics
// (an entry appears on getFileHandle({create}), contents swap in on close, abort discards).
import { describe, expect, it } from 'vitest';
import { concatBytes } from './sink.ts';
import {
  blobSource,
  checkUnchanged,
  directoryHandleFiles,
  directoryHandleFolder,
  fileSnapshot,
  InputChangedError,
  useByobReads,
} from './browser.ts';

const BYTES = Uint8Array.from({ length: 64 }, (_, i) => i * 3);

class FakeDirectory {
  readonly files = new Map<string, Uint8Array>();
  /** How each file was last opened for writing. */
  readonly opened: string[] = [];
  /** Bytes a sync write takes at most (a full disk writes less than asked). */
  syncLimit = Infinity;
  constructor(
    readonly name: string,
    readonly opfs = false,
  ) {}

  /** OPFS only: a handle that writes in place, as FileSystemSyncAccessHandle does. */
  private syncAccess(name: string) {
    const files = this.files;
    let open = true;
    return {
      write: (data: Uint8Array, { at }: { at: number }) => {
        if (!open) throw new DOMException('closed', 'InvalidStateError');
        const n = Math.min(data.byteLength, this.syncLimit);
        const old = files.get(name) ?? new Uint8Array(0);
        const grown = new Uint8Array(Math.max(old.byteLength, at + n));
        grown.set(old);
        grown.set(data.subarray(0, n), at);
        files.set(name, grown);
        return n;
      },
      truncate: (size: number) => files.set(name, (files.get(name) ?? new Uint8Array(0)).slice(0, size)),
      flush: () => undefined,
      close: () => void (open = false),
    };
  }

  private handle(name: string) {
    const files = this.files;
    return {
      kind: 'file' as const,
      name,
      getFile: async () => new File([files.get(name)!.slice()], name),
      ...(this.opfs
        ? {
            createSyncAccessHandle: async () => {
              this.opened.push(`sync:${name}`);
              return this.syncAccess(name);
            },
          }
        : {}),
      createWritable: async () => {
        this.opened.push(`stream:${name}`);
        const chunks: Uint8Array[] = [];
        return {
          write: async (data: Uint8Array) => void chunks.push(data.slice()),
          close: async () => void files.set(name, concatBytes(chunks)),
          abort: async () => undefined,
        };
      },
    };
  }

  async getFileHandle(name: string, options?: { create?: boolean }) {
    if (!this.files.has(name)) {
      if (!options?.create) throw new DOMException(`${name} not found`, 'NotFoundError');
      this.files.set(name, new Uint8Array(0));
    }
    return this.handle(name);
  }

  async removeEntry(name: string) {
    if (!this.files.delete(name)) throw new DOMException(`${name} not found`, 'NotFoundError');
  }

  async *values() {
    yield { kind: 'directory' as const, name: 'subfolder' };
    for (const name of this.files.keys()) yield this.handle(name);
  }

  asHandle(): FileSystemDirectoryHandle {
    return this as unknown as FileSystemDirectoryHandle;
  }
}

describe('blobSource', () => {
  it('reads ranges of a File by slicing, named after the file', async () => {
    const source = blobSource(new File([BYTES], 'agent.safetensors'));
    expect([source.name, source.size]).toEqual(['agent.safetensors', 64]);
    expect(await source.read(60, 4)).toEqual(BYTES.subarray(60));
    const into = new Uint8Array(8);
    const view = await source.read(0, 5, into);
    expect(view.buffer).toBe(into.buffer);
    expect(view).toEqual(BYTES.subarray(0, 5));
    expect(blobSource(new Blob([BYTES])).name).toBe('blob');
    expect(blobSource(new Blob([BYTES]), 'given').name).toBe('given');
    await expect(source.read(63, 2)).rejects.toMatchObject({ code: 'ReadFailed', file: 'agent.safetensors' });
  });

  it('reports a read failure (a file changed on disk) as ReadFailed saying so', async () => {
    const changed = (): never => {
      throw new DOMException('changed', 'NotReadableError');
    };
    const failing = {
      size: 10,
      slice: () => ({
        stream: () => new ReadableStream({ type: 'bytes', pull: changed }),
        arrayBuffer: () => Promise.reject(new DOMException('changed', 'NotReadableError')),
      }),
    } as unknown as Blob;
    await expect(blobSource(failing, 'w.safetensors').read(0, 4)).rejects.toMatchObject({
      code: 'ReadFailed',
      message: expect.stringMatching(/^w\.safetensors: .*changed or moved since it was chosen/),
    });
    // A file that is shorter now than when it was chosen.
    const shrunk = { size: 10, slice: () => new Blob([BYTES.subarray(0, 3)]) } as unknown as Blob;
    await expect(blobSource(shrunk, 's.safetensors').read(0, 4)).rejects.toMatchObject({
      code: 'ReadFailed',
      message: expect.stringMatching(/^s\.safetensors: got 3 of 4 bytes at offset 0: the file changed/),
    });
    // One that gives more than asked: nothing is written past the buffer given.
    const grown = { size: 10, slice: () => new Blob([BYTES.subarray(0, 6)]) } as unknown as Blob;
    const into = new Uint8Array(6).fill(0xee);
    await expect(blobSource(grown, 'g.safetensors').read(0, 4, into.subarray(0, 4))).rejects.toMatchObject({
      code: 'ReadFailed',
      message: expect.stringMatching(/^g\.safetensors: got 6 of 4 bytes/),
    });
    expect(into.subarray(4)).toEqual(new Uint8Array([0xee, 0xee]));
  });

  /** `blob` with its slices' stream() and arrayBuffer() calls counted, and `stall` in place of stream(). */
  function counted(blob: Blob, stall?: (part: Blob) => ReadableStream<Uint8Array>) {
    const calls = { streams: 0, buffers: 0 };
    const wrapped = {
      size: blob.size,
      slice: (a?: number, b?: number) => {
        const part = blob.slice(a, b);
        return {
          size: part.size,
          slice: (x?: number, y?: number) => ({
            arrayBuffer: () => {
              calls.buffers += 1;
              return part.slice(x, y).arrayBuffer();
            },
          }),
          stream: () => {
            calls.streams += 1;
            return stall ? stall(part) : part.stream();
          },
          arrayBuffer: () => {
            calls.buffers += 1;
            return part.arrayBuffer();
          },
        };
      },
    } as unknown as Blob;
    return { wrapped, calls };
  }

  const random = (n: number, seed: number): Uint8Array<ArrayBuffer> => {
    let state = seed;
    return Uint8Array.from(
      { length: n },
      () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) >>> 24,
    );
  };

  it('reads through a BYOB reader into the buffer given, in pieces, without arrayBuffer()', async () => {
    const bytes = random(5 * (1 << 20) + 13, 7);
    const { wrapped, calls } = counted(new Blob([bytes]));
    const source = blobSource(wrapped, 'big.safetensors');
    const into = new Uint8Array(bytes.length + 5).fill(0xee);
    for (const [offset, length] of [
      [0, bytes.length],
      [1, (2 << 20) + 1],
      [bytes.length - 3, 3],
      [4_000_001, 0],
    ] as const) {
      into.fill(0xee);
      const view = await source.read(offset, length, into);
      expect(view.buffer).toBe(into.buffer);
      expect(view.length).toBe(length);
      // Compared whole (toEqual walks megabytes element by element).
      expect(Buffer.compare(view, bytes.subarray(offset, offset + length))).toBe(0);
      expect(into[length]).toBe(0xee);
    }
    expect(await source.read(17, 9)).toEqual(bytes.subarray(17, 26));
    expect(calls).toEqual({ streams: 5, buffers: 0 });
  });

  it('goes on through arrayBuffer() once a BYOB read stalls, and stays there', async () => {
    const bytes = random(3000, 11);
    // A byte stream that hands over 1000 bytes and then never another.
    const stalling = (part: Blob): ReadableStream<Uint8Array> => {
      let sent = false;
      return new ReadableStream({
        type: 'bytes',
        async pull(controller) {
          if (sent) return new Promise<void>(() => undefined);
          sent = true;
          controller.enqueue(new Uint8Array(await part.slice(0, 1000).arrayBuffer()));
        },
      });
    };
    const { wrapped, calls } = counted(new Blob([bytes]), stalling);
    const source = blobSource(wrapped, 'stalls.safetensors', 20);
    try {
      expect(await source.read(100, 2500, new Uint8Array(2500))).toEqual(bytes.subarray(100, 2600));
      // The stalled read's first 1000 bytes came from the stream, the rest from arrayBuffer().
      expect(calls).toEqual({ streams: 1, buffers: 1 });
      expect(await source.read(0, 3000, new Uint8Array(3000))).toEqual(bytes);
      expect(calls).toEqual({ streams: 1, buffers: 2 });
    } finally {
      useByobReads(true);
    }
  });
});

describe('directoryHandleFolder', () => {
  it('writes through createWritable and lists, opens and removes files', async () => {
    const dir = new FakeDirectory('out');
    const folder = directoryHandleFolder(dir.asHandle());
    expect(folder.name).toBe('out');
    const sink = await folder.create('model.safetensors');
    await sink.write(BYTES.subarray(0, 10));
    await sink.write(BYTES.subarray(10));
    await sink.close();
    expect(dir.files.get('model.safetensors')).toEqual(BYTES);
    expect(await folder.list()).toEqual(['model.safetensors']);
    expect(await (await folder.open('model.safetensors')).read(10, 3)).toEqual(BYTES.subarray(10, 13));
    await folder.remove('model.safetensors');
    await folder.remove('model.safetensors');
    expect(await folder.list()).toEqual([]);
    await expect(folder.open('model.safetensors')).rejects.toMatchObject({ code: 'ReadFailed' });
    await expect(sink.write(BYTES)).rejects.toMatchObject({ code: 'WriteMismatch' });
  });

  it('on abort removes a file it created, but keeps one that existed', async () => {
    const dir = new FakeDirectory('out');
    const folder = directoryHandleFolder(dir.asHandle());
    const fresh = await folder.create('new.safetensors');
    await fresh.write(BYTES);
    await fresh.abort();
    expect(dir.files.has('new.safetensors')).toBe(false);
    dir.files.set('old.json', Uint8Array.from([1]));
    const replaced = await folder.create('old.json');
    await replaced.write(BYTES);
    await replaced.abort();
    expect(dir.files.get('old.json')).toEqual(Uint8Array.from([1]));
  });

  it('with syncAccess, writes new OPFS files in place, chunk after chunk', async () => {
    const dir = new FakeDirectory('merge', true);
    const folder = directoryHandleFolder(dir.asHandle(), { syncAccess: true });
    const sink = await folder.create('model.safetensors');
    for (let at = 0; at < BYTES.length; at += 7) await sink.write(BYTES.subarray(at, at + 7));
    await sink.close();
    expect(dir.opened).toEqual(['sync:model.safetensors']);
    expect(dir.files.get('model.safetensors')).toEqual(BYTES);
    await expect(sink.write(BYTES)).rejects.toMatchObject({ code: 'WriteMismatch' });
    // A file that exists is replaced through a stream, so it stays whole until the new one is.
    const again = await folder.create('model.safetensors');
    await again.write(BYTES.subarray(0, 5));
    expect(dir.files.get('model.safetensors')).toEqual(BYTES);
    await again.close();
    expect(dir.opened).toEqual(['sync:model.safetensors', 'stream:model.safetensors']);
    expect(dir.files.get('model.safetensors')).toEqual(BYTES.subarray(0, 5));
  });

  it('with syncAccess, removes an aborted file and names one the storage could not hold', async () => {
    const dir = new FakeDirectory('merge', true);
    const folder = directoryHandleFolder(dir.asHandle(), { syncAccess: true });
    const aborted = await folder.create('a.safetensors');
    await aborted.write(BYTES);
    await aborted.abort();
    expect(dir.files.has('a.safetensors')).toBe(false);
    dir.syncLimit = 10;
    const full = await folder.create('b.safetensors');
    await expect(full.write(BYTES)).rejects.toMatchObject({
      code: 'WriteMismatch',
      file: 'b.safetensors',
      message: expect.stringMatching(/wrote 10 of 64 bytes at offset 0: the browser's storage is full/),
    });
  });

  it('without syncAccess, or where the handle has none, writes through createWritable', async () => {
    const opfs = new FakeDirectory('merge', true);
    await (await directoryHandleFolder(opfs.asHandle()).create('x')).close();
    const picked = new FakeDirectory('picked');
    await (await directoryHandleFolder(picked.asHandle(), { syncAccess: true }).create('x')).close();
    expect([...opfs.opened, ...picked.opened]).toEqual(['stream:x', 'stream:x']);
  });

  it('skips Chromium swap files and refuses unsafe names', async () => {
    const dir = new FakeDirectory('out');
    dir.files.set('a.json', new Uint8Array(1));
    dir.files.set('a.json.crswap', new Uint8Array(1));
    const folder = directoryHandleFolder(dir.asHandle());
    expect(await folder.list()).toEqual(['a.json']);
    await expect(folder.create('../a.json')).rejects.toMatchObject({ code: 'UnsafePath' });
  });
});

describe('directoryHandleFiles', () => {
  it('returns the top-level files, sorted, as lazily read model files', async () => {
    const dir = new FakeDirectory('model');
    dir.files.set('model.safetensors', BYTES);
    dir.files.set('config.json', new TextEncoder().encode('{}'));
    const files = await directoryHandleFiles(dir.asHandle());
    expect(files.map((f) => [f.name, f.source.size])).toEqual([
      ['config.json', 2],
      ['model.safetensors', 64],
    ]);
    expect(await files[1]!.source.read(1, 2)).toEqual(BYTES.subarray(1, 3));
  });
});

describe('checkUnchanged', () => {
  const file = (bytes: Uint8Array, lastModified: number): File =>
    new File([bytes.slice()], 'model.safetensors', { lastModified });

  /** A File whose reads fail as a browser's do once the file on disk changed. */
  function stale(original: File): File {
    return Object.assign(original, {
      slice: () => ({
        arrayBuffer: () => Promise.reject(new DOMException('could not be read', 'NotReadableError')),
      }),
    });
  }

  it('passes files that read as they were, and skips blobs that are no file on disk', async () => {
    const snapshot = fileSnapshot('model.safetensors', file(BYTES, 1_700_000_000_000));
    expect(snapshot).toMatchObject({ size: 64, lastModified: 1_700_000_000_000 });
    const fetched = fileSnapshot('config.json', new Blob([BYTES.slice()]));
    expect(fetched.lastModified).toBeNull();
    await expect(checkUnchanged('coder', [snapshot, fetched])).resolves.toBeUndefined();
  });

  it('names the model and the file when a snapshot can no longer be read', async () => {
    const snapshot = fileSnapshot('model.safetensors', stale(file(BYTES, 1_700_000_000_000)));
    const error = await checkUnchanged('coder', [snapshot]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputChangedError);
    expect(error).toMatchObject({ name: 'InputChanged', model: 'coder', file: 'model.safetensors' });
    expect((error as Error).message).toMatch(
      /^coder: model\.safetensors changed after it was chosen \(it had 64 bytes.*reading it now fails: could not be read/,
    );
  });

  it('compares size and modification time with the file as it is now, and a file that is gone', async () => {
    const snapshot = fileSnapshot('model.safetensors', file(BYTES, 1_000));
    const touched = file(BYTES, 2_000);
    const grown = file(new Uint8Array(65), 1_000);
    await expect(
      checkUnchanged('writer', [snapshot], async () => file(BYTES, 1_000)),
    ).resolves.toBeUndefined();
    await expect(checkUnchanged('writer', [snapshot], async () => touched)).rejects.toThrow(
      /^writer: model\.safetensors changed .*now 64 bytes, modified 1970-01-01T00:00:02\.000Z/,
    );
    await expect(checkUnchanged('writer', [snapshot], async () => grown)).rejects.toThrow(/now 65 bytes/);
    await expect(checkUnchanged('writer', [snapshot], async () => null)).rejects.toThrow(/now it is gone/);
  });
});

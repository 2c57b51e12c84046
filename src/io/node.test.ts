// The Node file source and folder against a temporary directory: positional reads, atomic
// `.partial` renames, abort leaving nothing, model folders with symlinks, and files hashed off the
// main thread.
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { at } from './checked.ts';
import { SafetensorsError } from './errors.ts';
import { nodeFileSource, nodeFolder, nodeModelFiles, sha256File } from './node.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-io-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const BYTES = Uint8Array.from({ length: 300 }, (_, i) => (i * 7) & 0xff);

describe('nodeFileSource', () => {
  it('reads exact ranges at any offset, into a given buffer', async () => {
    await writeFile(join(dir, 'w.safetensors'), BYTES);
    const source = await nodeFileSource(join(dir, 'w.safetensors'));
    try {
      expect([source.name, source.size]).toEqual(['w.safetensors', 300]);
      expect(Array.from(await source.read(295, 5))).toEqual(Array.from(BYTES.subarray(295)));
      const into = new Uint8Array(64);
      const view = await source.read(10, 50, into);
      expect(view.buffer).toBe(into.buffer);
      expect(view).toEqual(BYTES.subarray(10, 60));
      // The full path: a bare shard name is the same in the base and every agent.
      await expect(source.read(299, 2)).rejects.toMatchObject({
        code: 'ReadFailed',
        file: join(dir, 'w.safetensors'),
      });
    } finally {
      await source.close();
    }
  });

  it('reports a file that shrank while open', async () => {
    const path = join(dir, 'w.safetensors');
    await writeFile(path, BYTES);
    const source = await nodeFileSource(path);
    try {
      await writeFile(path, BYTES.subarray(0, 100));
      await expect(source.read(50, 100)).rejects.toMatchObject({
        code: 'ReadFailed',
        message: expect.stringMatching(/changed while being read/),
      });
    } finally {
      await source.close();
    }
  });

  it('fails with ReadFailed for a missing file', async () => {
    await expect(nodeFileSource(join(dir, 'none.safetensors'))).rejects.toMatchObject({ code: 'ReadFailed' });
  });
});

describe('nodeFolder', () => {
  it('creates the folder, writes to .partial and renames on close', async () => {
    const out = join(dir, 'a', 'b');
    const folder = nodeFolder(out);
    expect(folder.name).toBe('b');
    const sink = await folder.create('model.safetensors');
    await sink.write(BYTES.subarray(0, 100));
    await sink.write(BYTES.subarray(100));
    expect(await readdir(out)).toEqual(['model.safetensors.partial']);
    expect(await folder.list()).toEqual([]);
    await sink.close();
    expect(await readdir(out)).toEqual(['model.safetensors']);
    expect(new Uint8Array(await readFile(join(out, 'model.safetensors')))).toEqual(BYTES);
    expect(await folder.list()).toEqual(['model.safetensors']);
    const source = await folder.open('model.safetensors');
    expect(await source.read(200, 100)).toEqual(BYTES.subarray(200));
    await expect(sink.write(BYTES)).rejects.toMatchObject({ code: 'WriteMismatch' });
  });

  it('replaces an existing file only on close, and abort leaves the old one and no .partial', async () => {
    const folder = nodeFolder(dir);
    await writeFile(join(dir, 'config.json'), 'old');
    const replaced = await folder.create('config.json');
    await replaced.write(new TextEncoder().encode('new'));
    expect(await readFile(join(dir, 'config.json'), 'utf8')).toBe('old');
    await replaced.close();
    expect(await readFile(join(dir, 'config.json'), 'utf8')).toBe('new');

    const aborted = await folder.create('config.json');
    await aborted.write(new TextEncoder().encode('half'));
    await aborted.abort();
    await aborted.abort();
    expect(await readdir(dir)).toEqual(['config.json']);
    expect(await readFile(join(dir, 'config.json'), 'utf8')).toBe('new');

    const fresh = await folder.create('x.safetensors');
    await fresh.abort();
    expect(await readdir(dir)).toEqual(['config.json']);
  });

  it('removes files idempotently, lists only complete files, refuses unsafe names', async () => {
    const folder = nodeFolder(dir);
    expect(await nodeFolder(join(dir, 'missing')).list()).toEqual([]);
    await writeFile(join(dir, 'b.json'), '');
    await writeFile(join(dir, 'a.json'), '');
    await writeFile(join(dir, 'c.safetensors.partial'), '');
    await mkdir(join(dir, 'sub'));
    expect(await folder.list()).toEqual(['a.json', 'b.json']);
    await folder.remove('a.json');
    await folder.remove('a.json');
    expect(await folder.list()).toEqual(['b.json']);
    await expect(folder.create('../escape.json')).rejects.toMatchObject({ code: 'UnsafePath' });
    await expect(folder.open('sub/x')).rejects.toMatchObject({ code: 'UnsafePath' });
    await expect(folder.open('nope.json')).rejects.toMatchObject({ code: 'ReadFailed' });
  });
});

describe('nodeModelFiles', () => {
  it('lists the top-level files of a folder, following symlinks, opening lazily', async () => {
    await mkdir(join(dir, 'blobs'));
    await writeFile(join(dir, 'blobs', 'abc123'), BYTES);
    const model = join(dir, 'snapshot');
    await mkdir(model);
    await symlink(join(dir, 'blobs', 'abc123'), join(model, 'model.safetensors'));
    await writeFile(join(model, 'config.json'), '{}');
    await mkdir(join(model, 'nested'));
    await writeFile(join(model, 'nested', 'ignored.safetensors'), BYTES);
    const files = await nodeModelFiles(model);
    try {
      expect(files.map((f) => [f.name, f.source.size])).toEqual([
        ['config.json', 2],
        ['model.safetensors', 300],
      ]);
      expect(await at(files, 1).source.read(0, 3)).toEqual(BYTES.subarray(0, 3));
    } finally {
      for (const file of files) await file.source.close();
    }
  });

  it('takes a single file as the whole model', async () => {
    await writeFile(join(dir, 'policy.safetensors'), BYTES);
    const files = await nodeModelFiles(join(dir, 'policy.safetensors'));
    expect(files.map((f) => f.name)).toEqual(['policy.safetensors']);
    for (const file of files) await file.source.close();
  });

  it('fails with ReadFailed for a missing path', async () => {
    await expect(nodeModelFiles(join(dir, 'nothing'))).rejects.toMatchObject({ code: 'ReadFailed' });
  });
});

describe('sha256File', () => {
  it.each([true, false])(
    'hashes a whole file as a one-shot digest does, chunk edges included (on a thread: %s)',
    async (onThread) => {
      // Three 8 MiB read chunks and a part, of random bytes.
      const bytes = new Uint8Array((3 << 23) + 12_345);
      for (let i = 0; i < bytes.length; i += 65_536) crypto.getRandomValues(bytes.subarray(i, i + 65_536));
      const path = join(dir, 'hashed.bin');
      await writeFile(path, bytes);
      expect(await sha256File(path, onThread)).toBe(createHash('sha256').update(bytes).digest('hex'));
      await writeFile(join(dir, 'empty.bin'), new Uint8Array(0));
      expect(await sha256File(join(dir, 'empty.bin'), onThread)).toBe(createHash('sha256').digest('hex'));
    },
  );

  it.each([true, false])('names the file it could not read (on a thread: %s)', async (onThread) => {
    const missing = join(dir, 'gone.safetensors');
    const error = await sha256File(missing, onThread).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SafetensorsError);
    expect(String(error)).toContain('gone.safetensors');
    expect(String(error)).toMatch(/could not read the file/);
  });
});

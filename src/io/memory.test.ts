// memorySource and memoryFolder: exact reads, bounds, copies, and commit-on-close semantics.
import { describe, expect, it } from 'vitest';
import { SafetensorsError } from './errors.ts';
import { checkFileName, memoryFolder } from './sink.ts';
import { memorySource } from './source.ts';

describe('memorySource', () => {
  const bytes = Uint8Array.from({ length: 16 }, (_, i) => i);

  it('reads exactly the range asked for, into a given buffer when there is one', async () => {
    const source = memorySource('m', bytes);
    expect(source.size).toBe(16);
    expect(Array.from(await source.read(3, 4))).toEqual([3, 4, 5, 6]);
    const into = new Uint8Array(10);
    const view = await source.read(14, 2, into);
    expect(view.buffer).toBe(into.buffer);
    expect(Array.from(view)).toEqual([14, 15]);
    expect((await source.read(16, 0)).length).toBe(0);
  });

  it('copies, so callers never alias the source', async () => {
    const source = memorySource('m', bytes);
    const read = await source.read(0, 2);
    read[0] = 99;
    expect(bytes[0]).toBe(0);
  });

  it.each([
    [15, 2, undefined, /past the end of the file \(16 bytes\)/],
    [-1, 1, undefined, /invalid read/],
    [0.5, 1, undefined, /invalid read/],
    [0, 4, new Uint8Array(3), /read buffer of 3 bytes is smaller than the 4/],
  ])('refuses read(%s, %s) as ReadFailed', async (offset, length, into, message) => {
    const read = memorySource('m.safetensors', bytes).read(offset, length, into);
    await expect(read).rejects.toBeInstanceOf(SafetensorsError);
    await expect(read).rejects.toMatchObject({
      code: 'ReadFailed',
      file: 'm.safetensors',
      message: expect.stringMatching(message),
    });
  });
});

describe('memoryFolder', () => {
  it('makes a file visible only on close, copying the chunks', async () => {
    const folder = memoryFolder('out');
    const sink = await folder.create('a.bin');
    const chunk = Uint8Array.from([1, 2]);
    await sink.write(chunk);
    chunk[0] = 9;
    await sink.write(Uint8Array.from([3]));
    expect(await folder.list()).toEqual([]);
    await sink.close();
    expect(await folder.list()).toEqual(['a.bin']);
    expect(Array.from(folder.files.get('a.bin') ?? [])).toEqual([1, 2, 3]);
    expect(Array.from(await (await folder.open('a.bin')).read(1, 2))).toEqual([2, 3]);
    await expect(sink.write(chunk)).rejects.toMatchObject({ code: 'WriteMismatch' });
  });

  it('discards an aborted file and keeps what was there before', async () => {
    const folder = memoryFolder('out');
    const first = await folder.create('a.bin');
    await first.write(Uint8Array.from([1]));
    await first.close();
    const second = await folder.create('a.bin');
    await second.write(Uint8Array.from([2, 2]));
    await second.abort();
    expect(Array.from(folder.files.get('a.bin') ?? [])).toEqual([1]);
    const fresh = await folder.create('b.bin');
    await fresh.abort();
    expect(await folder.list()).toEqual(['a.bin']);
  });

  it('removes files, without error for a missing one, and fails to open a missing one', async () => {
    const folder = memoryFolder('out');
    const sink = await folder.create('x');
    await sink.close();
    await folder.remove('x');
    await folder.remove('x');
    expect(await folder.list()).toEqual([]);
    await expect(folder.open('x')).rejects.toMatchObject({ code: 'ReadFailed' });
  });

  it.each(['../x', 'a/b', 'a\\b', '/abs', 'C:x', 'https://x', '.', '', 'a\nb', 'a..b'])(
    'refuses the file name %j',
    async (name) => {
      await expect(memoryFolder('out').create(name)).rejects.toMatchObject({ code: 'UnsafePath' });
    },
  );

  it('accepts ordinary model file names', () => {
    for (const name of [
      'model-00001-of-00002.safetensors',
      'config.json',
      'README.md',
      '.gitattributes',
      'tokenizer (1).json',
    ]) {
      expect(() => checkFileName('out', name)).not.toThrow();
    }
  });
});

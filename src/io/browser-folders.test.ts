// The folder walking of the model pickers, run in Node: <input> file lists as Node Files with a
// webkitRelativePath, and showDirectoryPicker handles as a small in-memory tree.
import { describe, expect, it } from 'vitest';
import { fromFileList, pickFolder, readHandle, type DirectoryPicker } from './browser-folders.ts';

/** A File as a folder <input> hands it over: its path below the chosen folder's parent. */
function inputFile(path: string): File {
  const file = new File([path], path.split('/').pop() ?? path);
  Object.defineProperty(file, 'webkitRelativePath', { value: path });
  return file;
}

const list = (files: File[]): FileList => files as unknown as FileList;
const names = (files: { name: string }[]): string[] => files.map((f) => f.name).sort();

describe('fromFileList', () => {
  it('keeps a model folder’s own files and names the model after the folder', () => {
    const picks = fromFileList(
      list([
        inputFile('llama/model.safetensors'),
        inputFile('llama/config.json'),
        inputFile('llama/extra/notes.txt'),
      ]),
    );
    expect(picks.map((p) => p.label)).toEqual(['llama']);
    expect(names(picks[0]?.files ?? [])).toEqual(['config.json', 'model.safetensors']);
  });

  it('reads a folder without weights as a folder of model folders, one pick each, sorted', () => {
    const picks = fromFileList(
      list([
        inputFile('agents/zeta/model.safetensors'),
        inputFile('agents/alpha/model-00001-of-00002.safetensors'),
        inputFile('agents/alpha/model-00002-of-00002.safetensors'),
        inputFile('agents/alpha/config.json'),
        inputFile('agents/readme/notes.md'),
        inputFile('agents/LICENSE'),
      ]),
    );
    expect(picks.map((p) => p.label)).toEqual(['alpha', 'zeta']);
    expect(names(picks[0]?.files ?? [])).toEqual([
      'config.json',
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
    ]);
    expect(names(picks[1]?.files ?? [])).toEqual(['model.safetensors']);
  });

  it('keeps a set subfolder with a config but no weights, for its card to refuse by name, and names the set', () => {
    const picks = fromFileList(
      list([
        inputFile('run/base/model.safetensors'),
        inputFile('run/agent-0/config.json'),
        inputFile('run/agent-1/adapter_config.json'),
        inputFile('run/logs/train.txt'),
      ]),
    );
    expect(picks.map((p) => [p.label, p.set])).toEqual([
      ['agent-0', 'run'],
      ['agent-1', 'run'],
      ['base', 'run'],
    ]);
  });

  it('gives a folder with no weights anywhere as one empty pick, for the preflight to report', () => {
    expect(fromFileList(list([inputFile('docs/readme.md')]))).toEqual([{ label: 'docs', files: [] }]);
  });

  it('names loose files after their weights, shard suffix dropped', () => {
    const picks = fromFileList(
      list([new File(['{}'], 'config.json'), new File(['x'], 'mistral-00001-of-00003.safetensors')]),
    );
    expect(picks.map((p) => p.label)).toEqual(['mistral']);
    expect(names(picks[0]?.files ?? [])).toEqual(['config.json', 'mistral-00001-of-00003.safetensors']);
    expect(fromFileList(list([]))).toEqual([]);
  });
});

/** A directory handle over a nested object: a string is a file's text, an object a subfolder. */
interface Tree {
  [name: string]: string | Tree;
}
function handle(name: string, tree: Tree): FileSystemDirectoryHandle {
  return {
    kind: 'directory',
    name,
    async *values() {
      for (const [entry, value] of Object.entries(tree))
        yield typeof value === 'string'
          ? { kind: 'file', name: entry, getFile: async () => new File([value], entry) }
          : handle(entry, value);
    },
  } as unknown as FileSystemDirectoryHandle;
}
const picker =
  (dir: FileSystemDirectoryHandle): DirectoryPicker =>
  async () =>
    dir;

describe('readHandle and pickFolder', () => {
  it('lists a folder’s files (not Chromium’s .crswap files) and its subfolders', async () => {
    const read = await readHandle(
      handle('m', { 'model.safetensors': 'w', 'model.safetensors.crswap': 's', sub: { 'a.txt': 'a' } }),
    );
    expect(names(read.files)).toEqual(['model.safetensors']);
    expect(await read.files[0]?.blob.text()).toBe('w');
    expect(read.folders.map((f) => f.name)).toEqual(['sub']);
  });

  it('picks a model folder as one model with its handle kept for a reload', async () => {
    const dir = handle('base', { 'model.safetensors': 'w', tokenizer: { 'vocab.json': '{}' } });
    const picks = await pickFolder(picker(dir));
    expect(picks.map((p) => [p.label, names(p.files), p.handle === dir])).toEqual([
      ['base', ['model.safetensors'], true],
    ]);
  });

  it('picks a folder of model folders as one model per folder with weights', async () => {
    const picks = await pickFolder(
      picker(
        handle('agents', {
          a: { 'model.safetensors': 'a' },
          b: { 'model.safetensors': 'b', 'config.json': '{}' },
          empty: { 'notes.md': 'n' },
        }),
      ),
    );
    expect(picks.map((p) => [p.label, names(p.files), p.handle?.name])).toEqual([
      ['a', ['model.safetensors'], 'a'],
      ['b', ['config.json', 'model.safetensors'], 'b'],
    ]);
    expect(picks.every((p) => p.set === 'agents')).toBe(true);
  });

  it('keeps a subfolder with only a config, sorted among the others', async () => {
    const picks = await pickFolder(
      picker(handle('set', { z: { 'model.safetensors': 'z' }, broken: { 'config.json': '{}' } })),
    );
    expect(picks.map((p) => p.label)).toEqual(['broken', 'z']);
  });
});

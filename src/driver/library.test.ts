// The merges library's completeness rule against folders shaped as the driver leaves them: finished,
// stopped before the card, stopped mid-shard, and sharded with a shard missing.
import { describe, expect, it } from 'vitest';
import { indexJson, planShards } from '../format/sharded.ts';
import { cardLambdas, folderStatus, listLibrary, type LibraryFile } from './library.ts';

const companions: LibraryFile[] = [
  { file: 'config.json', bytes: 300 },
  { file: 'mergekit_config.yml', bytes: 200 },
];

/** A real sharded plan: three 4 KiB tensors in shards of at most 5 KiB. */
function sharded() {
  const plan = planShards(
    ['a', 'b', 'c'].map((name) => ({ name, dtype: 'F32' as const, shape: [1024] })),
    5 * 1024,
  );
  const shards = plan.shards.map((s) => ({ file: s.file, bytes: 4200 }));
  return { index: indexJson(plan), shards };
}

describe('folderStatus', () => {
  it('calls a single-file merge with its card complete', () => {
    const files = [
      ...companions,
      { file: 'model.safetensors', bytes: 9000 },
      { file: 'README.md', bytes: 900 },
    ];
    expect(folderStatus(files, null)).toEqual({ status: 'complete', reason: null });
  });

  it('calls a folder without the card, written last, incomplete', () => {
    const files = [...companions, { file: 'model.safetensors', bytes: 9000 }];
    expect(folderStatus(files, null)).toMatchObject({
      status: 'incomplete',
      reason: expect.stringContaining('README.md'),
    });
  });

  it('calls a folder with a swap file of an unfinished write incomplete, even with a card', () => {
    const files = [
      ...companions,
      { file: 'README.md', bytes: 900 },
      { file: 'model.safetensors', bytes: 9000 },
      { file: 'model.safetensors.crswap', bytes: 10 },
    ];
    expect(folderStatus(files, null).status).toBe('incomplete');
  });

  it('checks every shard the index names', () => {
    const { index, shards } = sharded();
    expect(shards.length).toBeGreaterThan(1);
    const card = { file: 'README.md', bytes: 900 };
    const indexFile = { file: 'model.safetensors.index.json', bytes: index.length };
    expect(folderStatus([...companions, ...shards, indexFile, card], index).status).toBe('complete');
    const missing = shards[1]!.file;
    const without = [...companions, ...shards.filter((s) => s.file !== missing), indexFile, card];
    expect(folderStatus(without, index)).toEqual({
      status: 'incomplete',
      reason: `shard ${missing} is missing or empty`,
    });
    expect(folderStatus([...companions, ...shards, indexFile, card], '{ not json').status).toBe('incomplete');
  });

  it('calls an empty folder incomplete', () => {
    expect(folderStatus([], null).status).toBe('incomplete');
  });
});

/** A folder of in-memory files, shaped as OPFS's handles are for listLibrary. */
function memoryFolder(name: string, files: Record<string, string>): FileSystemDirectoryHandle {
  const handles = Object.entries(files).map(([file, text]) => ({
    kind: 'file' as const,
    name: file,
    getFile: async () => new File([text], file),
  }));
  return {
    kind: 'directory',
    name,
    async *values() {
      yield* handles;
    },
    async getFileHandle(file: string) {
      const handle = handles.find((h) => h.name === file);
      if (!handle) throw new DOMException(`${file} not found`, 'NotFoundError');
      return handle;
    },
  } as unknown as FileSystemDirectoryHandle;
}

describe('listLibrary', () => {
  it('reads an index over 256 KiB whole: a finished many-tensor merge is complete', async () => {
    const tensors = Array.from({ length: 4000 }, (_, i) => ({
      name: `model.layers.${i}.mlp.experts.0.down_proj.weight`,
      dtype: 'F32' as const,
      shape: [64],
    }));
    const plan = planShards(tensors, 64 * 1024);
    const index = indexJson(plan);
    expect(index.length).toBeGreaterThan(256 * 1024);
    const files: Record<string, string> = { 'model.safetensors.index.json': index, 'README.md': '# card' };
    for (const shard of plan.shards) files[shard.file] = 'x';
    const [entry] = await listLibrary(rootOf(memoryFolder('big', files)));
    expect(entry).toMatchObject({ folder: 'big', status: 'complete', reason: null });
    const lastShard = plan.shards.at(-1)?.file ?? '';
    const { [lastShard]: _dropped, ...withoutShard } = files;
    const [stopped] = await listLibrary(rootOf(memoryFolder('big', withoutShard)));
    expect(stopped).toMatchObject({ status: 'incomplete', reason: `shard ${lastShard} is missing or empty` });
  });
});

/** The merges/ root holding one folder. */
function rootOf(folder: FileSystemDirectoryHandle): FileSystemDirectoryHandle {
  return {
    kind: 'directory',
    name: 'merges',
    async *values() {
      yield folder;
    },
  } as unknown as FileSystemDirectoryHandle;
}

describe('listLibrary: names', () => {
  it('names an entry from its card’s title, unescaped; a card without a name (or none) names nothing', async () => {
    const card = '---\nbase_model: "base"\n---\n# My \\<b\\>\\|merge\n\nMade with merge-studio.\n';
    const [named] = await listLibrary(
      rootOf(memoryFolder('my-merge-1-abcd', { 'README.md': card, 'model.safetensors': 'x' })),
    );
    expect(named).toMatchObject({ folder: 'my-merge-1-abcd', name: 'My <b>|merge', status: 'complete' });
    const [cli] = await listLibrary(
      rootOf(memoryFolder('old', { 'README.md': '# Merged model (ties)\n', 'model.safetensors': 'x' })),
    );
    expect(cli?.name).toBeNull();
    const [none] = await listLibrary(rootOf(memoryFolder('stopped', { 'model.safetensors': 'x' })));
    expect(none?.name).toBeNull();
  });
});

describe('cardLambdas', () => {
  it('reads λ per agent back from the card’s Inputs list, in agent order', () => {
    const card = [
      '## Inputs',
      '',
      '- base: `base`',
      '- agent 1: `key` (λ = 1.000000)',
      '- agent 2: `door (v2)` (λ = 1.023400)',
      '',
    ].join('\n');
    expect(cardLambdas(card)).toEqual([1, 1.0234]);
  });

  it('is null for a card without them or with them out of order', () => {
    expect(cardLambdas(null)).toBeNull();
    expect(cardLambdas('# Merged model\n')).toBeNull();
    expect(cardLambdas('- agent 2: `a` (λ = 1.000000)\n')).toBeNull();
    expect(cardLambdas('- agent 1: `a` (λ = undefined)\n')).toBeNull();
  });
});

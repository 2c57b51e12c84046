// openModel over in-memory folders: single files, sharded folders and every cross-check failure,
// the ambiguous and refused layouts, and config.json.
import { describe, expect, it } from 'vitest';
import { at, must } from '../io/checked.ts';
import { memorySource, type ModelFile } from '../io/source.ts';
import { SafetensorsError, type SafetensorsErrorCode } from '../io/errors.ts';
import { openModel } from './model.ts';
import { indexJson, planShards } from './sharded.ts';
import { serializeSafetensors, type TensorSpec } from './write.ts';

const encoder = new TextEncoder();

function folder(entries: Record<string, Uint8Array | string>): ModelFile[] {
  return Object.entries(entries).map(([name, content]) => ({
    name,
    source: memorySource(name, typeof content === 'string' ? encoder.encode(content) : content),
  }));
}

function tensor(
  name: string,
  dtype: TensorSpec['dtype'],
  shape: number[],
  fill: number,
): TensorSpec & { data: Uint8Array } {
  const size = shape.reduce((p, d) => p * d, 1) * (dtype === 'F32' ? 4 : dtype === 'BF16' ? 2 : 1);
  return { name, dtype, shape, data: new Uint8Array(size).fill(fill) };
}

const TENSORS = [
  tensor('model.embed_tokens.weight', 'BF16', [4, 2], 1),
  tensor('model.layers.0.mlp.weight', 'F32', [2, 2], 2),
  tensor('model.layers.1.mlp.weight', 'F32', [2, 2], 3),
  tensor('model.norm.weight', 'BF16', [2], 4),
];

/** A sharded folder as our writer produces it. */
function shardedFolder(maxShardBytes = 20): Record<string, Uint8Array | string> {
  const plan = planShards(TENSORS, maxShardBytes);
  const files: Record<string, Uint8Array | string> = { 'model.safetensors.index.json': indexJson(plan) };
  for (const shard of plan.shards) {
    files[shard.file] = serializeSafetensors(
      shard.tensors.map((t) =>
        must(
          TENSORS.find((x) => x.name === t.name),
          t.name,
        ),
      ),
    );
  }
  return files;
}

async function rejection(files: ModelFile[]): Promise<SafetensorsError> {
  try {
    await openModel('agent', files);
  } catch (error) {
    expect(error).toBeInstanceOf(SafetensorsError);
    return error as SafetensorsError;
  }
  throw new Error('the model was accepted');
}

async function expectRejected(
  files: ModelFile[],
  code: SafetensorsErrorCode,
  file: string,
  message: RegExp,
  tensor?: string,
): Promise<void> {
  const error = await rejection(files);
  expect([error.code, error.file, error.tensor]).toEqual([code, file, tensor]);
  expect(error.message).toMatch(message);
}

describe('openModel: single files', () => {
  it('opens model.safetensors with config.json: tensors by name, absolute offsets, config', async () => {
    const bytes = serializeSafetensors(TENSORS, { format: 'pt' });
    const config = '{"model_type": "llama", "vocab_size": 4, "torch_dtype": "bfloat16"}\n';
    const model = await openModel(
      'base',
      folder({ 'model.safetensors': bytes, 'config.json': config, 'tokenizer.json': '{}' }),
    );
    expect(model.sharded).toBe(false);
    expect(model.files.map((f) => f.name)).toEqual(['model.safetensors', 'config.json', 'tokenizer.json']);
    expect([...model.tensors.keys()]).toEqual(TENSORS.map((t) => t.name).sort());
    expect(model.config).toEqual({ model_type: 'llama', vocab_size: 4, torch_dtype: 'bfloat16' });
    expect(model.configText).toBe(config);
    expect(model.totalBytes).toBe(TENSORS.reduce((sum, t) => sum + t.data.length, 0));
    expect(model.shards).toHaveLength(1);
    expect(model.shards[0]?.metadata).toEqual({ format: 'pt' });
    for (const t of TENSORS) {
      const info = must(model.tensors.get(t.name), t.name);
      expect(info.file).toBe('model.safetensors');
      expect(info.offset).toBe(at(model.shards, 0).dataStart + info.begin);
      expect(await model.source(info.file).read(info.offset, info.end - info.begin)).toEqual(t.data);
    }
    expect(() => model.source('other.safetensors')).toThrow(expect.objectContaining({ code: 'ReadFailed' }));
    expect(model.warnings).toEqual([]);
  });

  it('accepts a folder whose one weights file has another name (an adapter)', async () => {
    const bytes = serializeSafetensors(TENSORS.slice(0, 1));
    const model = await openModel(
      'lora',
      folder({ 'adapter_config.json': '{}', 'adapter_model.safetensors': bytes }),
    );
    expect(model.shards[0]?.file).toBe('adapter_model.safetensors');
    expect(model.tensors.get('model.embed_tokens.weight')?.file).toBe('adapter_model.safetensors');
  });

  it('names a file by its folder name even when its source calls itself otherwise', async () => {
    const bytes = serializeSafetensors(TENSORS);
    const model = await openModel('m', [
      { name: 'model.safetensors', source: memorySource('/tmp/x/model.safetensors', bytes) },
    ]);
    expect(model.shards[0]?.file).toBe('model.safetensors');
  });

  it('warns about a pickle beside the safetensors weights and never reads it', async () => {
    const model = await openModel(
      'm',
      folder({ 'model.safetensors': serializeSafetensors(TENSORS), 'pytorch_model.bin': 'PK' }),
    );
    expect(model.warnings).toEqual([expect.stringMatching(/ignored pytorch_model\.bin/)]);
  });

  it('passes header errors through, naming the weights file', async () => {
    const whole = serializeSafetensors(TENSORS);
    const bytes = whole.subarray(0, whole.length - 3);
    await expectRejected(
      folder({ 'model.safetensors': bytes }),
      'MetadataIncompleteBuffer',
      'model.safetensors',
      /truncated by 3 bytes/,
    );
  });
});

describe('openModel: refused layouts', () => {
  it('several .safetensors without an index are ambiguous', async () => {
    const bytes = serializeSafetensors(TENSORS);
    await expectRejected(
      folder({ 'a.safetensors': bytes, 'b.safetensors': bytes }),
      'AmbiguousModel',
      'agent',
      /2 \.safetensors files \(a\.safetensors, b\.safetensors\) and no index/,
    );
  });

  it('shards without their index are ambiguous, with a hint', async () => {
    const files = shardedFolder();
    delete files['model.safetensors.index.json'];
    await expectRejected(
      folder(files),
      'AmbiguousModel',
      'agent',
      /the index \(model\.safetensors\.index\.json\) is missing/,
    );
  });

  it('a stray model.safetensors beside an index is ambiguous, naming both', async () => {
    const files = { ...shardedFolder(), 'model.safetensors': serializeSafetensors(TENSORS) };
    await expectRejected(
      folder(files),
      'AmbiguousModel',
      'agent',
      /both model\.safetensors\.index\.json \(3 shards\) and model\.safetensors/,
    );
  });

  it('two indexes are ambiguous', async () => {
    const files = { ...shardedFolder(), 'adapter_model.safetensors.index.json': '{"weight_map":{}}' };
    await expectRejected(folder(files), 'AmbiguousModel', 'agent', /several indexes/);
  });

  it('two files with one name are ambiguous', async () => {
    const bytes = serializeSafetensors(TENSORS);
    const files = [...folder({ 'model.safetensors': bytes }), ...folder({ 'model.safetensors': bytes })];
    await expectRejected(files, 'AmbiguousModel', 'agent', /two files are named "model\.safetensors"/);
  });

  it('only pickles are refused with a conversion hint', async () => {
    await expectRejected(
      folder({ 'pytorch_model.bin': 'x', 'config.json': '{}', 'optimizer.pt': 'y' }),
      'PickleRefused',
      'agent',
      /PyTorch pickles can run code; convert to safetensors with/,
    );
  });

  it('no weights at all', async () => {
    await expectRejected(folder({}), 'NoWeights', 'agent', /holds no files/);
    await expectRejected(folder({ 'README.md': '# hi' }), 'NoWeights', 'agent', /only README\.md/);
  });

  it('an invalid config.json is an error naming config.json', async () => {
    const weights = serializeSafetensors(TENSORS);
    await expectRejected(
      folder({ 'model.safetensors': weights, 'config.json': '{"a": 1, "a": 2}' }),
      'InvalidHeaderDeserialization',
      'config.json',
      /^config\.json: is not valid JSON: duplicate key "a"/,
    );
    await expectRejected(
      folder({ 'model.safetensors': weights, 'config.json': '[1]' }),
      'InvalidHeaderDeserialization',
      'config.json',
      /not a JSON object/,
    );
    await expectRejected(
      folder({ 'model.safetensors': weights, 'config.json': new Uint8Array([0x7b, 0xff, 0x7d]) }),
      'InvalidHeaderDeserialization',
      'config.json',
      /not valid UTF-8/,
    );
  });
});

describe('openModel: sharded folders', () => {
  it('opens every shard and maps each tensor to its shard', async () => {
    const model = await openModel('base', folder(shardedFolder()));
    expect(model.sharded).toBe(true);
    expect(model.shards.map((s) => s.file)).toEqual([
      'model-00001-of-00003.safetensors',
      'model-00002-of-00003.safetensors',
      'model-00003-of-00003.safetensors',
    ]);
    expect([...model.tensors.values()].map((t) => [t.name, t.file])).toEqual([
      ['model.embed_tokens.weight', 'model-00003-of-00003.safetensors'],
      ['model.layers.0.mlp.weight', 'model-00001-of-00003.safetensors'],
      ['model.layers.1.mlp.weight', 'model-00002-of-00003.safetensors'],
      ['model.norm.weight', 'model-00003-of-00003.safetensors'],
    ]);
    for (const t of TENSORS) {
      const info = must(model.tensors.get(t.name), t.name);
      expect(await model.source(info.file).read(info.offset, info.end - info.begin)).toEqual(t.data);
    }
    expect(model.warnings).toEqual([]);
  });

  it('a missing shard', async () => {
    const files = shardedFolder();
    delete files['model-00002-of-00003.safetensors'];
    await expectRejected(
      folder(files),
      'MissingShard',
      'model.safetensors.index.json',
      /names 1 of its 3 shards that are not here: model-00002-of-00003\.safetensors/,
    );
  });

  it('an index entry that its shard does not have', async () => {
    const files = shardedFolder();
    const index = JSON.parse(files['model.safetensors.index.json'] as string);
    index.weight_map['model.ghost.weight'] = 'model-00003-of-00003.safetensors';
    files['model.safetensors.index.json'] = JSON.stringify(index);
    await expectRejected(
      folder(files),
      'TensorNotInShard',
      'model-00003-of-00003.safetensors',
      /the index is stale/,
      'model.ghost.weight',
    );
  });

  it('an index that points a tensor at the wrong shard', async () => {
    const files = shardedFolder();
    const index = JSON.parse(files['model.safetensors.index.json'] as string);
    index.weight_map['model.norm.weight'] = 'model-00001-of-00003.safetensors';
    files['model.safetensors.index.json'] = JSON.stringify(index);
    await expectRejected(
      folder(files),
      'TensorNotInShard',
      'model-00001-of-00003.safetensors',
      /does not have it/,
      'model.norm.weight',
    );
  });

  it('a shard tensor that the index omits', async () => {
    const files = shardedFolder();
    const index = JSON.parse(files['model.safetensors.index.json'] as string);
    delete index.weight_map['model.embed_tokens.weight'];
    files['model.safetensors.index.json'] = JSON.stringify(index);
    await expectRejected(
      folder(files),
      'TensorNotInIndex',
      'model-00003-of-00003.safetensors',
      /not in model\.safetensors\.index\.json's weight_map/,
      'model.embed_tokens.weight',
    );
  });

  it('a whole shard that the index omits', async () => {
    const files = shardedFolder();
    const index = JSON.parse(files['model.safetensors.index.json'] as string);
    delete index.weight_map['model.layers.1.mlp.weight'];
    files['model.safetensors.index.json'] = JSON.stringify(index);
    await expectRejected(
      folder(files),
      'TensorNotInIndex',
      'model-00002-of-00003.safetensors',
      /in a shard that model\.safetensors\.index\.json does not name/,
      'model.layers.1.mlp.weight',
    );
  });

  it('a tensor in two shards', async () => {
    const files = shardedFolder();
    files['model-00003-of-00003.safetensors'] = serializeSafetensors([at(TENSORS, 3), at(TENSORS, 1)]);
    await expectRejected(
      folder(files),
      'DuplicateTensor',
      'model-00003-of-00003.safetensors',
      /also in model-00001-of-00003\.safetensors/,
      'model.layers.0.mlp.weight',
    );
  });

  it('an unsafe shard name in the index', async () => {
    const files = shardedFolder();
    const index = JSON.parse(files['model.safetensors.index.json'] as string);
    index.weight_map['model.norm.weight'] = '../../etc/model.safetensors';
    files['model.safetensors.index.json'] = JSON.stringify(index);
    await expectRejected(
      folder(files),
      'UnsafePath',
      'model.safetensors.index.json',
      /refusing the file name/,
    );
  });

  it('a total_size mismatch is a warning, and unreferenced weights are ignored with a warning', async () => {
    const files = shardedFolder();
    const index = JSON.parse(files['model.safetensors.index.json'] as string);
    index.metadata.total_size = 24; // a tensor count, as some writers put there
    files['model.safetensors.index.json'] = JSON.stringify(index);
    files['consolidated.safetensors'] = serializeSafetensors(TENSORS);
    const model = await openModel('base', folder(files));
    expect(model.warnings).toEqual([
      expect.stringMatching(
        /ignored consolidated\.safetensors: not named by model\.safetensors\.index\.json/,
      ),
      expect.stringMatching(/says total_size 24 but the shards hold 52 bytes/),
    ]);
  });
});

describe('openModel: the tensor map', () => {
  // Names whose UTF-16 order differs from code point order (astral vs U+E000..U+FFFF), prefixes of
  // each other, digits that sort as text, and non-ASCII: the order must be UTF-8 byte order.
  const NAMES = ['a', 'a.b', 'a.10', 'a.9', 'ab', 'é', '\ue000', '\uffff', '😀', '😀.x', 'Z', 'z.0', 'z'];
  const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

  function shuffled<T>(items: readonly T[], seed: number): T[] {
    const out = [...items];
    let state = seed;
    for (let i = out.length - 1; i > 0; i--) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      const j = state % (i + 1);
      [out[i], out[j]] = [at(out, j, 'item'), at(out, i, 'item')];
    }
    return out;
  }

  // Dtypes mixed at random put the file's offset order apart from name order (the writer orders by
  // alignment first), so both the in-order pass and the sort are taken over the seeds.
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`lists, finds and misses by name exactly as a Map in UTF-8 byte order (seed ${seed})`, async () => {
      const dtypes = ['F32', 'BF16', 'U8'] as const;
      const specs = shuffled(NAMES, seed).map((name, i) =>
        tensor(name, at(dtypes, seed % 2 === 0 ? 0 : (i + seed) % 3, 'dtype'), [1, i + 1], i),
      );
      const model = await openModel('m', folder({ 'model.safetensors': serializeSafetensors(specs) }));
      const expected = [...NAMES].sort(byteOrder);
      const fileOrder = must(model.shards[0], 'shard').tensors.map((t) => t.name);
      if (seed % 2 === 0) expect(fileOrder).toEqual(expected);
      else expect(fileOrder).not.toEqual(expected);
      expect([...model.tensors.keys()]).toEqual(expected);
      expect([...model.tensors.values()].map((t) => t.name)).toEqual(expected);
      expect([...model.tensors].map(([name, t]) => [name, t.name])).toEqual(expected.map((n) => [n, n]));
      expect([...model.tensors.entries()].map(([name]) => name)).toEqual(expected);
      const seen: string[] = [];
      model.tensors.forEach((t, name, map) => {
        expect(map).toBe(model.tensors);
        expect(t.name).toBe(name);
        seen.push(name);
      });
      expect(seen).toEqual(expected);
      expect(model.tensors.size).toBe(NAMES.length);
      for (const spec of specs) {
        const found = must(model.tensors.get(spec.name), spec.name);
        expect([found.name, found.dtype, found.shape]).toEqual([spec.name, spec.dtype, spec.shape]);
        expect(model.tensors.has(spec.name)).toBe(true);
      }
      for (const absent of ['', 'a.', 'a.1', 'aa', 'é.x', '\ud83d', 'zz', '😀.', '0'])
        expect([model.tensors.get(absent), model.tensors.has(absent)]).toEqual([undefined, false]);
    });
  }
});

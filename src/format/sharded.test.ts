// Shard planning, the index as written, and strict index parsing with unsafe shard names refused.
import { describe, expect, it } from 'vitest';
import { at } from '../io/checked.ts';
import { SafetensorsError } from '../io/errors.ts';
import { indexJson, parseIndex, planShards } from './sharded.ts';
import type { TensorSpec } from './write.ts';

const specs: TensorSpec[] = [
  { name: 'layers.0.w', dtype: 'F32', shape: [10] }, // 40 bytes
  { name: 'layers.1.w', dtype: 'F32', shape: [10] }, // 40
  { name: 'embed', dtype: 'BF16', shape: [100] }, // 200
  { name: 'norm', dtype: 'BF16', shape: [5] }, // 10
  { name: 'step', dtype: 'I64', shape: [] }, // 8
];

describe('planShards', () => {
  it('fills shards in layout order within the budget; a tensor over the budget gets its own shard', () => {
    const plan = planShards(specs, 90);
    expect(plan.shards.map((s) => [s.file, s.tensors.map((t) => t.name), s.bytes])).toEqual([
      ['model-00001-of-00003.safetensors', ['step', 'layers.0.w', 'layers.1.w'], 88],
      ['model-00002-of-00003.safetensors', ['embed'], 200],
      ['model-00003-of-00003.safetensors', ['norm'], 10],
    ]);
    expect(plan.totalSize).toBe(298);
    for (const shard of plan.shards) expect(shard.bytes <= 90 || shard.tensors.length === 1).toBe(true);
  });

  it('names a single shard model.safetensors, also when there are no tensors', () => {
    expect(planShards(specs, 5_000_000_000).shards.map((s) => s.file)).toEqual(['model.safetensors']);
    expect(planShards([], 100)).toEqual({
      shards: [{ file: 'model.safetensors', tensors: [], bytes: 0 }],
      totalSize: 0,
    });
  });

  it('rejects duplicate names and a non-positive budget', () => {
    expect(() => planShards([at(specs, 0), at(specs, 0)], 100)).toThrow(
      expect.objectContaining({ code: 'DuplicateTensor' }),
    );
    expect(() => planShards(specs, 0)).toThrow(RangeError);
  });
});

describe('indexJson', () => {
  it('writes total_size first and weight_map sorted, and parses back', () => {
    const plan = planShards(specs, 90);
    const text = indexJson(plan, { format: 'pt', total_size: 1 });
    const json = JSON.parse(text) as {
      metadata: Record<string, unknown>;
      weight_map: Record<string, string>;
    };
    expect(Object.keys(json.metadata)).toEqual(['total_size', 'format']);
    expect(json.metadata.total_size).toBe(298);
    expect(Object.keys(json.weight_map)).toEqual(['embed', 'layers.0.w', 'layers.1.w', 'norm', 'step']);
    expect(json.weight_map.norm).toBe('model-00003-of-00003.safetensors');
    expect(text.endsWith('}\n')).toBe(true);
    const parsed = parseIndex('model.safetensors.index.json', text);
    expect(parsed.totalSize).toBe(298);
    expect([...parsed.weightMap]).toEqual(Object.entries(json.weight_map));
  });
});

describe('parseIndex', () => {
  const FILE = 'model.safetensors.index.json';
  const index = (weightMap: Record<string, string>): string =>
    JSON.stringify({ metadata: { total_size: 4 }, weight_map: weightMap });

  function rejection(text: string): SafetensorsError {
    try {
      parseIndex(FILE, text);
    } catch (error) {
      expect(error).toBeInstanceOf(SafetensorsError);
      expect((error as SafetensorsError).file).toBe(FILE);
      expect((error as Error).message.startsWith(`${FILE}: `)).toBe(true);
      return error as SafetensorsError;
    }
    throw new Error('accepted');
  }

  it.each([
    '../model-00001-of-00002.safetensors',
    'sub/model.safetensors',
    'sub\\model.safetensors',
    '/etc/model.safetensors',
    'C:model.safetensors',
    'https://example.com/model.safetensors',
    'model..safetensors',
    'model.bin',
    '.safetensors',
    'model\u0000.safetensors',
    '',
  ])('rejects the shard name %j as UnsafePath', (name) => {
    expect(rejection(index({ w: name })).code).toBe('UnsafePath');
  });

  it.each([
    ['invalid JSON', '{"weight_map": ', /line 1, column 16/],
    ['duplicate keys', '{"weight_map": {"w": "a.safetensors", "w": "b.safetensors"}}', /duplicate key "w"/],
    ['a missing weight_map', '{"metadata": {}}', /weight_map/],
    ['a non-string shard', '{"weight_map": {"w": 1}}', /"w" is not a file name/],
    ['a string total_size', '{"metadata": {"total_size": "4"}, "weight_map": {}}', /total_size/],
    ['an array', '[]', /not a JSON object/],
  ])('rejects %s as InvalidIndex', (_, text, message) => {
    const error = rejection(text);
    expect(error.code).toBe('InvalidIndex');
    expect(error.message).toMatch(message);
  });

  it('accepts an index without metadata', () => {
    expect(parseIndex(FILE, '{"weight_map": {"w": "model-00001-of-00001.safetensors"}}')).toEqual({
      weightMap: new Map([['w', 'model-00001-of-00001.safetensors']]),
    });
  });
});

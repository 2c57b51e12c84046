// The compatibility report: every difference at once, the vocabulary and tied-embedding notes.
import { describe, expect, it } from 'vitest';
import { memorySource } from '../io/source.ts';
import { checkCompatibility } from './compat.ts';
import { openModel, type Model } from './model.ts';
import { tensorByteLength } from './safetensors.ts';
import { serializeSafetensors, type TensorSpec } from './write.ts';

async function model(name: string, specs: TensorSpec[], config?: Record<string, unknown>): Promise<Model> {
  const bytes = serializeSafetensors(
    specs.map((s) => ({ ...s, data: new Uint8Array(tensorByteLength(s.dtype, s.shape)) })),
  );
  const files = [{ name: 'model.safetensors', source: memorySource('model.safetensors', bytes) }];
  if (config)
    files.push({
      name: 'config.json',
      source: memorySource('config.json', new TextEncoder().encode(JSON.stringify(config))),
    });
  return openModel(name, files);
}

const BASE: TensorSpec[] = [
  { name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [32, 4] },
  { name: 'model.layers.0.self_attn.q_proj.weight', dtype: 'BF16', shape: [4, 4] },
  { name: 'model.layers.0.mlp.up_proj.weight', dtype: 'BF16', shape: [8, 4] },
  { name: 'model.norm.weight', dtype: 'BF16', shape: [4] },
  { name: 'lm_head.weight', dtype: 'BF16', shape: [32, 4] },
];

describe('checkCompatibility', () => {
  it('is ok for identical layouts', async () => {
    const report = checkCompatibility(await model('base', BASE), [
      await model('a', BASE),
      await model('b', BASE),
    ]);
    expect(report).toEqual({ ok: true, common: BASE.map((t) => t.name).sort(), issues: [], notes: [] });
  });

  it('lists every difference of every agent, not just the first', async () => {
    const base = await model('base', BASE, { vocab_size: 32, model_type: 'llama' });
    const agentA = await model(
      'coder',
      [
        { name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [34, 4] },
        { name: 'model.layers.0.self_attn.q_proj.weight', dtype: 'F32', shape: [4, 4] },
        { name: 'model.layers.0.mlp.up_proj.weight', dtype: 'F16', shape: [4, 8] },
        { name: 'model.norm.weight', dtype: 'I32', shape: [4] },
        { name: 'lm_head.weight', dtype: 'BF16', shape: [34, 4] },
        { name: 'value_head.weight', dtype: 'F32', shape: [1, 4] },
      ],
      { vocab_size: 34, model_type: 'llama' },
    );
    const agentB = await model(
      'tool',
      BASE.filter((t) => t.name !== 'model.norm.weight'),
    );
    const report = checkCompatibility(base, [agentA, agentB]);
    expect(report.ok).toBe(false);
    expect(report.issues.map((i) => [i.model, i.kind, i.tensor])).toEqual([
      ['coder', 'shape', 'lm_head.weight'],
      ['coder', 'shape', 'model.embed_tokens.weight'],
      ['coder', 'shape', 'model.layers.0.mlp.up_proj.weight'],
      ['coder', 'dtype', 'model.norm.weight'],
      ['coder', 'extra', 'value_head.weight'],
      ['tool', 'missing', 'model.norm.weight'],
    ]);
    expect(report.issues[0]?.detail).toBe('base has shape [32, 4], coder [34, 4]');
    expect(report.issues[3]?.detail).toBe('base stores BF16, coder I32');
    expect(report.issues[4]?.detail).toBe('in coder but not in base');
    expect(report.issues[5]?.detail).toBe('in base but not in tool');
    // Float dtypes may differ (SPEC.md "Inputs stored in other precisions"): q_proj is common.
    expect(report.common).toEqual(['model.layers.0.self_attn.q_proj.weight']);
    expect(report.notes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^vocabulary size differs in model\.embed_tokens\.weight: base has 32 rows, coder 34/,
        ),
        expect.stringMatching(/^vocabulary size differs in lm_head\.weight/),
        'config.json vocab_size differs: base 32, coder 34.',
        'coder stores 1 tensor in F32 where base stores BF16: they are compared at the base’s precision unless a read precision is chosen.',
        'coder stores 1 tensor in F16 where base stores BF16: they are compared at the base’s precision unless a read precision is chosen.',
      ]),
    );
    // A transposed projection is a shape issue, not a vocabulary one.
    expect(report.notes.some((n) => n.includes('up_proj'))).toBe(false);
  });

  it('keeps the tensors that agree as common while reporting the rest', async () => {
    const agent = await model('a', [
      ...BASE.slice(0, 4),
      { name: 'lm_head.weight', dtype: 'BF16', shape: [33, 4] },
    ]);
    const report = checkCompatibility(await model('base', BASE), [agent]);
    expect(report.common).toEqual(
      BASE.slice(0, 4)
        .map((t) => t.name)
        .sort(),
    );
    expect(report.issues).toHaveLength(1);
    expect(report.ok).toBe(false);
  });

  it('notes tied embeddings when lm_head is absent, and mixing tied with untied', async () => {
    const tied = BASE.filter((t) => t.name !== 'lm_head.weight');
    const report = checkCompatibility(await model('base', tied), [await model('a', tied)]);
    expect(report.ok).toBe(true);
    expect(report.notes).toEqual([
      'base has no lm_head: its embeddings are tied (the output layer reuses the input embeddings).',
      'a has no lm_head: its embeddings are tied (the output layer reuses the input embeddings).',
    ]);
    const mixed = checkCompatibility(await model('base', tied), [await model('b', BASE)]);
    expect(mixed.issues).toEqual([
      { tensor: 'lm_head.weight', kind: 'extra', model: 'b', detail: 'in b but not in base' },
    ]);
    expect(mixed.notes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^lm_head is present in some models but not in base: tied and untied/),
      ]),
    );
  });

  it('notes a model_type mismatch from config.json', async () => {
    const report = checkCompatibility(await model('base', BASE, { model_type: 'llama' }), [
      await model('a', BASE, { model_type: 'qwen2' }),
    ]);
    expect(report.ok).toBe(true);
    expect(report.notes).toEqual([
      'config.json model_type differs: base is llama, a qwen2: these are different architectures.',
    ]);
  });
});

describe('mixed precision', () => {
  it('accepts any mix of BF16, F16 and F32 and refuses other dtype differences', async () => {
    const base = await model('base', BASE);
    const wide = await model(
      'verl',
      BASE.map((t) => ({ ...t, dtype: 'F32' as const })),
    );
    const half = await model(
      'half',
      BASE.map((t, i) => (i === 0 ? { ...t, dtype: 'F16' as const } : t)),
    );
    const report = checkCompatibility(base, [wide, half]);
    expect(report.ok).toBe(true);
    expect(report.common).toEqual(BASE.map((t) => t.name).sort());
    expect(report.notes).toEqual([
      'verl stores 5 tensors in F32 where base stores BF16: they are compared at the base’s precision unless a read precision is chosen.',
      'half stores 1 tensor in F16 where base stores BF16: they are compared at the base’s precision unless a read precision is chosen.',
    ]);
    const f64 = await model(
      'f64',
      BASE.map((t, i) => (i === 0 ? { ...t, dtype: 'F64' as const } : t)),
    );
    expect(checkCompatibility(base, [f64]).issues).toEqual([
      { tensor: BASE[0]?.name, kind: 'dtype', model: 'f64', detail: 'base stores BF16, f64 F64' },
    ]);
  });
});

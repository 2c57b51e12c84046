// The inspect report and its CLI table, over a small sharded model with a config.
import { describe, expect, it } from 'vitest';
import { memorySource } from '../io/source.ts';
import {
  escapeTerminal,
  formatBytes,
  formatInspect,
  inspectModel,
  MAX_SHOWN_NAME,
  shownName,
} from './inspect.ts';
import { openModel } from './model.ts';
import { tensorByteLength } from './safetensors.ts';
import { indexJson, planShards } from './sharded.ts';
import { serializeSafetensors, type TensorSpec } from './write.ts';

const SPECS: TensorSpec[] = [
  { name: 'transformer.wte.weight', dtype: 'BF16', shape: [10, 4] },
  { name: 'transformer.h.0.attn.c_attn.weight', dtype: 'F32', shape: [4, 12] },
  { name: 'transformer.h.0.attn.bias', dtype: 'BOOL', shape: [1, 1, 3, 3] },
  { name: 'transformer.ln_f.weight', dtype: 'F32', shape: [4] },
];

async function sharded() {
  const plan = planShards(SPECS, 100);
  const files = [{ name: 'model.safetensors.index.json', text: indexJson(plan) }].map(({ name, text }) => ({
    name,
    source: memorySource(name, new TextEncoder().encode(text)),
  }));
  for (const shard of plan.shards) {
    const bytes = serializeSafetensors(
      shard.tensors.map((t) => ({ ...t, data: new Uint8Array(tensorByteLength(t.dtype, t.shape)) })),
    );
    files.push({ name: shard.file, source: memorySource(shard.file, bytes) });
  }
  const config = {
    model_type: 'gpt2',
    architectures: ['GPT2LMHeadModel'],
    n_embd: 4,
    n_layer: 1,
    vocab_size: 10,
    torch_dtype: 'float32',
  };
  files.push({
    name: 'config.json',
    source: memorySource('config.json', new TextEncoder().encode(JSON.stringify(config))),
  });
  return openModel('gpt2-agent', files);
}

describe('inspectModel', () => {
  it('summarises files, tensors, parameters per dtype and config facts', async () => {
    const model = await sharded();
    const report = inspectModel(model);
    expect(report.sharded).toBe(true);
    expect(report.files.map((f) => [f.file, f.tensors])).toEqual([
      ['model-00001-of-00003.safetensors', 1],
      ['model-00002-of-00003.safetensors', 2],
      ['model-00003-of-00003.safetensors', 1],
    ]);
    expect(report.files.reduce((sum, f) => sum + f.tensors, 0)).toBe(4);
    expect(report.files.map((f) => f.bytes)).toEqual(model.shards.map((s) => s.fileSize));
    expect(report.tensors.map((t) => t.name)).toEqual(SPECS.map((s) => s.name).sort());
    expect(report.parameters).toBe(40 + 48 + 9 + 4);
    expect(report.dtypes).toEqual({ BF16: 40, F32: 52, BOOL: 9 });
    expect(report.totalBytes).toBe(80 + 192 + 9 + 16);
    expect(report.config).toEqual({
      modelType: 'gpt2',
      architectures: ['GPT2LMHeadModel'],
      hiddenSize: 4,
      layers: 1,
      vocabSize: 10,
      torchDtype: 'float32',
    });
  });

  it('formats a table with every tensor, the totals and the config', async () => {
    const text = formatInspect(inspectModel(await sharded()));
    const lines = text.split('\n');
    expect(lines[0]).toBe('gpt2-agent (sharded, 3 files)');
    expect(lines[1]).toMatch(/^name +dtype +shape +shard +bytes$/);
    expect(text).toMatch(
      /transformer\.h\.0\.attn\.c_attn\.weight +F32 +\[4, 12\] +model-0000\d-of-00003\.safetensors +192\n/,
    );
    expect(text).toContain('tensors: 4   parameters: 101   data: 297 B (297 bytes)');
    expect(text).toContain('dtypes: ');
    expect(text).toContain(
      'config: model_type gpt2, architectures GPT2LMHeadModel, hidden_size 4, layers 1, vocab_size 10, torch_dtype float32',
    );
    // Every row's byte column ends at the same place.
    const rows = lines.slice(1, 7);
    expect(new Set(rows.map((row) => row.length)).size).toBe(1);
  });

  it('formats a 300k-tensor model (a spread of every row overflowed the stack past ~120k)', () => {
    const tensors = Array.from({ length: 300_000 }, (_, i) => ({
      name: `model.layers.${i % 64}.mlp.experts.${i >> 6}.up_proj.weight`,
      dtype: 'BF16' as const,
      shape: [8, i % 7 === 0 ? 1234567 : 8],
      file: 'model.safetensors',
      bytes: 128,
    }));
    const text = formatInspect({
      name: 'moe',
      sharded: false,
      files: [{ file: 'model.safetensors', bytes: 128 * tensors.length, tensors: tensors.length }],
      tensors,
      totalBytes: 128 * tensors.length,
      parameters: 64 * tensors.length,
      dtypes: { BF16: 64 * tensors.length },
      warnings: [],
    });
    const lines = text.split('\n');
    expect(lines).toHaveLength(300_000 + 8);
    // The widest shape sets the column: every row's byte column still ends at one place.
    expect(new Set(lines.slice(1, 300_003).map((row) => row.length)).size).toBe(1);
  });

  it('formats byte sizes', () => {
    expect([formatBytes(0), formatBytes(1023), formatBytes(1536), formatBytes(5 * 1024 ** 3)]).toEqual([
      '0 B',
      '1023 B',
      '1.50 KiB',
      '5.00 GiB',
    ]);
    // A rate below 1 KiB/s (the CLI's progress) in whole bytes, not 137.81223083548667 B.
    expect(formatBytes(137.81223083548667)).toBe('138 B');
  });
});

describe('names printed to a terminal', () => {
  it('escapes bidi controls, which would reorder the line, and control characters', () => {
    expect(escapeTerminal('a\u202Eb\u2066c\u200Fd')).toBe('a\\u{202e}b\\u{2066}c\\u{200f}d');
    expect(escapeTerminal('x\u001b[2Jy')).toBe('x\\x1b[2Jy');
    // Idempotent: the table escapes its cells, then the whole text again.
    expect(escapeTerminal(escapeTerminal('a\u202Eb'))).toBe('a\\u{202e}b');
  });

  it('cuts a huge name to its start and says its length', () => {
    const name = `model.${'x'.repeat(1_000_000)}.weight`;
    const shown = shownName(name);
    expect(shown.length).toBeLessThanOrEqual(MAX_SHOWN_NAME);
    expect(shown).toMatch(/^model\.x+… \(1000013 characters\)$/);
    expect(shownName('model.norm.weight')).toBe('model.norm.weight');
  });
});

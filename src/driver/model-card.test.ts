// The model card's per-tensor parameter table: grouped by the values a recipe's gradients and filters
// gave each tensor, in linear time whatever the tensor count.
import { describe, expect, it } from 'vitest';
import { defaultParams } from '../methods/defaults.ts';
import type { MethodParams } from '../methods/types.ts';
import { parse } from 'yaml';
import { must } from '../io/checked.ts';
import type { MergeJob } from './job.ts';
import {
  cardName,
  markdownCode,
  markdownText,
  modelCard,
  perTensorLines,
  unescapeMarkdown,
} from './model-card.ts';

describe('perTensorLines', () => {
  it('groups 300k tensors into one row per set of values (a copy per tensor took minutes)', () => {
    const base = defaultParams('ties', 2);
    const halved: MethodParams = { ...base, density: [0.3, 0.2] };
    const used = new Map<string, MethodParams>();
    for (let i = 0; i < 300_000; i++) used.set(`model.layers.${i}.mlp.weight`, i % 3 === 0 ? halved : base);
    const lines = perTensorLines(used, ['a', 'b']);
    const rows = lines.filter((line) => line.startsWith('| ') && !line.startsWith('| weight'));
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain(
      'model.layers.0.mlp.weight, model.layers.3.mlp.weight, model.layers.6.mlp.weight … (100000)',
    );
    expect(rows[1]).toContain(
      'model.layers.1.mlp.weight, model.layers.2.mlp.weight, model.layers.4.mlp.weight … (200000)',
    );
  });

  it('writes no table where every tensor has the same values', () => {
    const params = defaultParams('ties', 2);
    expect(
      perTensorLines(
        new Map([
          ['a', params],
          ['b', params],
        ]),
        ['x', 'y'],
      ),
    ).toEqual([]);
  });
});

describe('modelCard: front matter and names', () => {
  const hostile = 'evil|name `x` <script>alert(1)</script>\n# Injected *bold* [link](http://x) _e_';
  function card(name?: string, base = 'base-model'): string {
    const job = {
      params: defaultParams('ties', 2),
      baseLabel: base,
      agentLabels: [hostile, 'coder'],
      engine: { kind: 'cpu', description: 'CPU reference' },
      // Models without tensors: the recipe's dtype (recipeOf) reads their dtypes.
      base: { tensors: new Map() },
      agents: [{ tensors: new Map() }, { tensors: new Map() }],
      ...(name === undefined ? {} : { name }),
    } as unknown as MergeJob;
    return modelCard({
      job,
      inputFiles: [{ model: hostile, file: 'a|b.safetensors', bytes: 1, sha256: '0'.repeat(64) }],
      lambdas: [1, 1],
      shards: [{ file: 'model.safetensors', bytes: 10, sha256: 'f'.repeat(64) }],
      merged: 1,
      copied: 0,
      used: new Map(),
    });
  }
  const unescapedPipes = (line: string): number => (line.match(/(?<!\\)\|/g) ?? []).length;

  it('carries base_model (YAML-quoted) and library_name as the Hub reads them', () => {
    const text = card(undefined, 'org/base: "quoted" #not-a-comment');
    const front = /^---\n([\s\S]*?)\n---\n/.exec(text)?.[1];
    const meta = parse(must(front, 'front matter')) as Record<string, unknown>;
    expect(meta.base_model).toBe('org/base: "quoted" #not-a-comment');
    expect(meta.library_name).toBe('transformers');
    expect(meta.tags).toEqual(['merge', 'merge-studio', 'ties']);
    // Without a name (the CLI), the title is as before and names no merge.
    expect(text).toContain('\n# Merged model (ties)\n');
    expect(cardName(text)).toBeNull();
  });

  it('escapes folder and model names wherever the card writes them (they went in raw)', () => {
    const text = card(hostile);
    // No name starts a heading or HTML, and every table row keeps its columns.
    expect(text).not.toMatch(/^#+ Injected/m);
    expect(text).toMatch(/^# evil\\\|name/m);
    const rows = text.split('\n').filter((line) => line.startsWith('| '));
    const inputRow = must(
      rows.find((line) => line.includes('.safetensors | 1 |')),
      'input file row',
    );
    expect(unescapedPipes(inputRow)).toBe(5);
    // Outside code, HTML is escaped: in the title and the table (code spans and the YAML block show it literally).
    for (const line of [inputRow, must(/^# .*$/m.exec(text)?.[0], 'title')])
      expect(line).not.toMatch(/(^|[^\\])<script/);
    // The agent's label in its list item: one code span holding it (backticks and all).
    expect(text).toContain(
      '- agent 1: ``evil|name `x` <script>alert(1)</script> # Injected *bold* [link](http://x) _e_``',
    );
    // The title reads back as the name (line break as a space).
    expect(cardName(text)).toBe(hostile.replace('\n', ' '));
  });

  it('escapes exactly: unescapeMarkdown undoes markdownText, and plain file names stay plain', () => {
    for (const name of ['a\\b', '\\_x_', 'ram-3-agents-2026-12-07', 'x|y`z`<a>&amp;#~*[]', 'down_proj'])
      expect(unescapeMarkdown(markdownText(name))).toBe(name);
    expect(markdownText('model-00001-of-00002.safetensors')).toBe('model-00001-of-00002.safetensors');
    expect(markdownText('model.layers.0.mlp.down_proj.weight')).toBe('model.layers.0.mlp.down_proj.weight');
    expect(markdownCode('a``b')).toBe('```a``b```');
    expect(markdownCode('`x')).toBe('`` `x ``');
  });
});

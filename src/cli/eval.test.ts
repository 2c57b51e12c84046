// `merge-studio eval` as a person runs it (the real command, --cpu): the JSON's exact shape, the
// numbers against transformers' own through the real tokenizer, candidates beside the models, and
// the errors a user meets (a bad probe line, an unsupported architecture, tokenizers that differ).

import { mkdtempSync, readFileSync, writeFileSync, cpSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { at } from '../io/checked.ts';
import { runCli } from '../test/cli.ts';
import { fixtureDir, fixtureReference, referenceMismatches } from '../test/eval-fixtures.ts';
import type { EvalResult } from '../eval/types.ts';

const dir = mkdtempSync(join(tmpdir(), 'merge-studio-eval-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const probes = join(fixtureDir(''), 'probes.jsonl');

describe('merge-studio eval', () => {
  it("writes the eval JSON, equal to transformers through the model folder's own tokenizer", async () => {
    const out = join(dir, 'eval.json');
    const result = await runCli(
      [
        'eval',
        '--model',
        fixtureDir('qwen3'),
        '--model',
        fixtureDir('llama3'),
        '--probes',
        probes,
        '--json',
        out,
        '--max-new-tokens',
        '8',
        '--cpu',
      ],
      { timeoutMs: 120_000 },
    );
    // The two folders' tokenizers differ: refused, naming the second.
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/llama3: its tokenizer\.json differs from qwen3's/);

    const ok = await runCli(
      [
        'eval',
        '--model',
        fixtureDir('qwen3'),
        '--probes',
        probes,
        '--json',
        out,
        '--max-new-tokens',
        '8',
        '--cpu',
      ],
      { timeoutMs: 120_000 },
    );
    expect(ok.stderr).toContain('Scored 6 probes on 1 models');
    expect(ok.code).toBe(0);
    const json = JSON.parse(readFileSync(out, 'utf8')) as EvalResult;
    expect(Object.keys(json)).toEqual(['models', 'examples', 'sets']);
    expect(json.models).toEqual([{ path: fixtureDir('qwen3'), label: 'qwen3' }]);
    expect(Object.keys(at(json.examples, 0))).toEqual([
      'set',
      'promptTokens',
      'completionTokens',
      'nll',
      'top1',
      'generated',
      'generatedText',
    ]);
    expect(Object.keys(at(json.sets, 0))).toEqual(['set', 'tokens', 'meanNll', 'top1Rate']);
    const reference = fixtureReference('qwen3');
    expect(referenceMismatches(json, 0, reference, 'plain', 1e-4)).toEqual([]);
    json.examples.forEach((e, i) =>
      expect(e.generatedText[0]).toBe(at(reference.probes, i).plain.generatedText),
    );
    expect(ok.stdout).toMatch(/facts\s+\d+\s+[\d.]+\s+\d+%/);
  });

  it('scores candidate merges beside the base and agents', async () => {
    const out = join(dir, 'sweep.json');
    const set = fixtureDir('qwen2-set');
    const result = await runCli(
      [
        'eval',
        '--base',
        join(set, 'base'),
        '--model',
        join(set, 'agent-0'),
        '--model',
        join(set, 'agent-1'),
        '--candidate',
        'ramplus r=0.3',
        '--candidate',
        'ties density=0.5,0.7',
        '--probes',
        probes,
        '--json',
        out,
        '--cpu',
      ],
      { timeoutMs: 120_000 },
    );
    expect(result.stderr).toContain('Scored 6 probes on 5 models');
    const json = JSON.parse(readFileSync(out, 'utf8')) as EvalResult;
    expect(json.models.map((m) => m.label)).toEqual([
      'base',
      'agent-0',
      'agent-1',
      'ramplus r=0.3',
      'ties density=0.5,0.7',
    ]);
    expect(at(json.sets, 0).meanNll).toHaveLength(5);
    expect(new Set(at(json.sets, 0).meanNll).size).toBe(5);
  });

  it.each([
    [['--candidate', 'ties dens=0.5'], /"dens=0.5" is not FLAG=VALUE/],
    [['--candidate', 'nope'], /start with a method/],
    [['--candidate', 'ties density=1.5'], /density/],
  ])('refuses a bad candidate %j', async (extra, message) => {
    const set = fixtureDir('qwen2-set');
    const result = await runCli([
      'eval',
      '--base',
      join(set, 'base'),
      '--model',
      join(set, 'agent-0'),
      ...extra,
      '--probes',
      probes,
      '--cpu',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it('names the probe file and line of a bad probe, and an architecture it cannot run', async () => {
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"prompt": "a", "completion": "b"}\n{"prompt": "a"}\n');
    const result = await runCli(['eval', '--model', fixtureDir('qwen3'), '--probes', bad, '--cpu']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/bad\.jsonl:2: .*completion/);

    const gpt2 = join(dir, 'gpt2');
    cpSync(fixtureDir('qwen3'), gpt2, { recursive: true });
    const config = JSON.parse(readFileSync(join(gpt2, 'config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(
      join(gpt2, 'config.json'),
      JSON.stringify({ ...config, architectures: ['GPT2LMHeadModel'] }),
    );
    const refused = await runCli(['eval', '--model', gpt2, '--probes', probes, '--cpu']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/gpt2: is a GPT2LMHeadModel; evaluation runs LlamaForCausalLM/);
  });
});

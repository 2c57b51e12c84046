// The tokenizer wrapper against transformers: for every fixture folder (scripts/eval-fixtures.py)
// and every probe, the prompt, completion and chat-prompt ids, the rendered chat prompt and the
// decoded greedy ids equal what transformers recorded in the folder's reference.json; then the
// tokenizer-only edge strings, the end-of-sequence ids, and the errors a broken folder gets.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVAL_FIXTURE_MODELS, EVAL_FIXTURES } from '../test/eval-fixtures.ts';
import { describe, expect, it } from 'vitest';
import { loadTokenizer, type TokenizerFiles } from './tokenize.ts';

const fixtures = EVAL_FIXTURES;
const MODELS = EVAL_FIXTURE_MODELS;

interface Scored {
  promptIds: number[];
  completionIds: number[];
  generated: number[];
  generatedText: string;
  generatedTextSkipSpecial: string;
}

interface Reference {
  vocabSize: number;
  eosIds: number[];
  chatTemplateSource: string;
  probes: { prompt: string; completion: string; plain: Scored; chat: Scored & { promptText: string } }[];
  tokenizerCases: {
    text: string;
    ids: number[];
    idsNoSpecial: number[];
    decoded: string;
    decodedSkipSpecial: string;
  }[];
}

function read(folder: string, name: string): string | undefined {
  const path = join(fixtures, folder, name);
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

function filesOf(folder: string): TokenizerFiles {
  return {
    tokenizerJson: read(folder, 'tokenizer.json'),
    tokenizerConfig: read(folder, 'tokenizer_config.json'),
    chatTemplate: read(folder, 'chat_template.jinja'),
    configJson: read(folder, 'config.json'),
    generationConfigJson: read(folder, 'generation_config.json'),
  };
}

describe.each(MODELS)('%s: the tokenizer matches transformers', (folder) => {
  const reference = JSON.parse(read(folder, 'reference.json') ?? '{}') as Reference;
  const tokenizer = loadTokenizer(filesOf(folder), folder);

  it('knows the vocabulary, the end-of-sequence ids and the chat template', () => {
    expect(tokenizer.vocabSize).toBe(reference.vocabSize);
    expect(tokenizer.eosIds).toEqual(reference.eosIds);
    expect(tokenizer.hasChatTemplate).toBe(true);
    expect(reference.probes).toHaveLength(6);
  });

  it.each([0, 1, 2, 3, 4, 5])('probe %i: prompt, completion and chat ids; decoded greedy ids', (index) => {
    const probe = reference.probes[index];
    if (!probe) throw new Error(`${folder}: reference.json has no probe ${index}`);
    expect(tokenizer.encodePrompt(probe.prompt, { chat: false })).toEqual(probe.plain.promptIds);
    expect(tokenizer.encodeCompletion(probe.completion)).toEqual(probe.plain.completionIds);
    expect(tokenizer.renderChat(probe.prompt)).toBe(probe.chat.promptText);
    expect(tokenizer.encodePrompt(probe.prompt, { chat: true })).toEqual(probe.chat.promptIds);
    expect(probe.chat.completionIds).toEqual(probe.plain.completionIds);
    for (const scored of [probe.plain, probe.chat]) {
      expect(tokenizer.decode(scored.generated)).toBe(scored.generatedText);
      expect(tokenizer.decode(scored.generated, { skipSpecialTokens: true })).toBe(
        scored.generatedTextSkipSpecial,
      );
    }
  });

  it('encodes and decodes the edge strings as transformers does', () => {
    expect(reference.tokenizerCases.length).toBeGreaterThan(5);
    for (const item of reference.tokenizerCases) {
      expect(tokenizer.encodePrompt(item.text, { chat: false }), item.text).toEqual(item.ids);
      expect(tokenizer.encodeCompletion(item.text), item.text).toEqual(item.idsNoSpecial);
      expect(tokenizer.decode(item.ids), item.text).toBe(item.decoded);
      expect(tokenizer.decode(item.ids, { skipSpecialTokens: true }), item.text).toBe(
        item.decodedSkipSpecial,
      );
    }
  });
});

describe('loadTokenizer', () => {
  const llama = filesOf('llama');
  const tokenizerJson = JSON.parse(llama.tokenizerJson ?? '{}') as Record<string, unknown>;
  const tokenizerConfig = JSON.parse(llama.tokenizerConfig ?? '{}') as Record<string, unknown>;
  const withJson = (json: unknown): TokenizerFiles => ({ ...llama, tokenizerJson: JSON.stringify(json) });
  const withConfig = (config: unknown): TokenizerFiles => ({
    ...llama,
    tokenizerConfig: JSON.stringify(config),
  });

  it('covers the three places a chat template lives', () => {
    const sources = MODELS.slice(0, 6).map(
      (folder) => (JSON.parse(read(folder, 'reference.json') ?? '{}') as Reference).chatTemplateSource,
    );
    expect(new Set(sources)).toEqual(new Set(['config-string', 'config-list', 'jinja-file']));
  });

  it('takes chat_template.jinja over the config, and passes bos_token / eos_token to the template', () => {
    const tokenizer = loadTokenizer(
      { ...llama, chatTemplate: '[{{ bos_token }}|{{ eos_token }}|{{ messages[0].content }}]' },
      'm',
    );
    expect(tokenizer.renderChat('hi')).toBe('[<s>|</s>|hi]');
    expect(tokenizer.encodePrompt('hi', { chat: true })).toEqual(
      tokenizer.encodePrompt('[<s>|</s>|hi]', { chat: false }).slice(1),
    );
    expect(tokenizer.bosId).toBe(0);
  });

  it('adds config.json, generation_config.json and extra end-of-sequence ids to the tokenizer eos', () => {
    const tokenizer = loadTokenizer(
      { ...llama, configJson: '{"eos_token_id": [3, 1]}', generationConfigJson: '{"eos_token_id": 2}' },
      'm',
      { extraEosIds: [7, 3] },
    );
    expect(tokenizer.eosIds).toEqual([1, 2, 3, 7]);
    expect(loadTokenizer({ tokenizerJson: llama.tokenizerJson }, 'm').eosIds).toEqual([]);
    const object = loadTokenizer(
      withConfig({ ...tokenizerConfig, eos_token: { content: '<|im_end|>', special: true } }),
      'm',
    );
    expect(object.eosIds).toEqual([1, 3]);
  });

  it('decodes an empty list to nothing and drops ids the tokenizer lacks', () => {
    const tokenizer = loadTokenizer(llama, 'm');
    expect(tokenizer.decode([])).toBe('');
    expect(tokenizer.decode([99999])).toBe('');
    expect(tokenizer.decode([51, 99999, 68])).toBe(tokenizer.decode([51, 68]));
  });

  it('cleans up decoded spaces only where transformers does (never for BPE unless forced)', () => {
    const ids = loadTokenizer(llama, 'm').encodeCompletion('a , b .');
    expect(loadTokenizer(llama, 'm').decode(ids)).toBe('a , b .');
    const forced = withConfig({
      ...tokenizerConfig,
      clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output: true,
    });
    expect(loadTokenizer(forced, 'm').decode(ids)).toBe('a, b.');
  });

  const failures: [string, TokenizerFiles, RegExp][] = [
    ['a missing tokenizer.json', { tokenizerJson: undefined }, /^dir\/m\/tokenizer\.json: missing/],
    [
      'a malformed tokenizer.json',
      { tokenizerJson: '{"model": ' },
      /^dir\/m\/tokenizer\.json: not valid JSON/,
    ],
    [
      'a tokenizer.json that is a list',
      { tokenizerJson: '[]' },
      /^dir\/m\/tokenizer\.json: expected a JSON object/,
    ],
    [
      'a tokenizer.json without a model',
      { tokenizerJson: '{"version": "1.0"}' },
      /^dir\/m\/tokenizer\.json: no "model"/,
    ],
    [
      'an unsupported model type',
      withJson({ ...tokenizerJson, model: { type: 'WordLevel', vocab: {}, unk_token: '[UNK]' } }),
      /^dir\/m\/tokenizer\.json: tokenizer model type "WordLevel" is not supported/,
    ],
    [
      'an unknown pre-tokenizer',
      withJson({ ...tokenizerJson, pre_tokenizer: { type: 'Klingon' } }),
      /^dir\/m\/tokenizer\.json: cannot be loaded: .*Klingon/,
    ],
    [
      'a malformed tokenizer_config.json',
      { ...llama, tokenizerConfig: '{' },
      /^dir\/m\/tokenizer_config\.json: not valid JSON/,
    ],
    [
      'an eos_token not in the vocabulary',
      withConfig({ ...tokenizerConfig, eos_token: '<|eot|>' }),
      /^dir\/m\/tokenizer_config\.json: eos_token "<\|eot\|>" is not a token of dir\/m\/tokenizer\.json/,
    ],
    [
      'a chat_template list without "default"',
      withConfig({ ...tokenizerConfig, chat_template: [{ name: 'tool_use', template: 'x' }] }),
      /^dir\/m\/tokenizer_config\.json: chat_template lists no "default" template \(it has: tool_use\)/,
    ],
    [
      'a chat_template of the wrong type',
      withConfig({ ...tokenizerConfig, chat_template: 3 }),
      /^dir\/m\/tokenizer_config\.json: chat_template must be a string or a list/,
    ],
    [
      'a bad eos_token_id',
      { ...llama, configJson: '{"eos_token_id": "2"}' },
      /^dir\/m\/config\.json: eos_token_id must be/,
    ],
  ];
  it.each(failures)('refuses %s, naming the file', (_what, files, message) => {
    expect(() => loadTokenizer(files, 'dir/m')).toThrow(message);
  });

  it('refuses --chat without a template, and a template that fails, naming the folder or file', () => {
    const { chat_template: _dropped, ...noTemplate } = tokenizerConfig;
    const bare = loadTokenizer(withConfig(noTemplate), 'dir/m');
    expect(bare.hasChatTemplate).toBe(false);
    expect(bare.encodePrompt('hi', { chat: false })).toEqual(
      loadTokenizer(llama, 'dir/m').encodePrompt('hi', { chat: false }),
    );
    expect(() => bare.encodePrompt('hi', { chat: true })).toThrow(/^dir\/m: no chat template/);
    const failing = loadTokenizer(
      { ...llama, chatTemplate: "{{ raise_exception('no users here') }}" },
      'dir/m',
    );
    expect(() => failing.renderChat('hi')).toThrow(
      /^dir\/m\/chat_template\.jinja: the chat template fails: .*no users here/,
    );
    expect(() => loadTokenizer(llama, 'dir/m', { extraEosIds: [1.5] })).toThrow(
      /^dir\/m: end-of-sequence id 1\.5/,
    );
  });
});

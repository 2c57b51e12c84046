// The model folder's own tokenizer, as transformers applies it (SPEC.md "Evaluation", Tokens):
// tokenizer.json through tokenizers.js, the chat template through @huggingface/jinja. The contract
// is transformers 5's behaviour, checked id for id against its recorded output in
// src/eval/tokenize.test.ts; where the two libraries' defaults differ, this file sets the option
// transformers uses. No Node imports: the studio's worker loads tokenizers with this file too.

import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';

/** A model folder's tokenizer files as text; a file the folder lacks is undefined. */
export interface TokenizerFiles {
  tokenizerJson: string | undefined;
  tokenizerConfig?: string | undefined;
  /** chat_template.jinja: wins over tokenizer_config.json's chat_template, as in transformers. */
  chatTemplate?: string | undefined;
  /** config.json, for eos_token_id. */
  configJson?: string | undefined;
  /** generation_config.json, for eos_token_id (what transformers' generate stops on). */
  generationConfigJson?: string | undefined;
}

export interface LoadTokenizerOptions {
  /** More ids that end a generation (e.g. from the command line). */
  extraEosIds?: readonly number[];
}

export interface ModelTokenizer {
  /** The folder (or label) the files came from, for messages. */
  readonly origin: string;
  /** One more than the highest id the tokenizer knows (added tokens included). */
  readonly vocabSize: number;
  /** Ids after which greedy generation stops, ascending, no repeats. */
  readonly eosIds: readonly number[];
  readonly bosId: number | undefined;
  /** Whether the folder has a chat template (`--chat` needs one). */
  readonly hasChatTemplate: boolean;
  /** The prompt as one user message with the generation prompt, through the chat template. */
  renderChat(text: string): string;
  /** Prompt ids: with the special tokens the tokenizer adds by default, or the chat rendering without. */
  encodePrompt(text: string, options: { chat: boolean }): number[];
  /** Completion ids: no special tokens added. */
  encodeCompletion(text: string): number[];
  /** Text of `ids`; ids the tokenizer does not know are dropped, as transformers drops them. */
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
}

/** Tokenizer model types tokenizers.js implements (tokenizer.json's model.type). */
const SUPPORTED_MODELS = ['BPE', 'WordPiece', 'Unigram'];

/**
 * The tokenizer of a model folder. `origin` names the folder in errors: a missing, malformed or
 * unsupported file is refused with its path and the reason, when loaded rather than on first use.
 */
export function loadTokenizer(
  files: TokenizerFiles,
  origin: string,
  options: LoadTokenizerOptions = {},
): ModelTokenizer {
  const tokenizerPath = `${origin}/tokenizer.json`;
  if (files.tokenizerJson === undefined)
    throw new Error(
      `${tokenizerPath}: missing. The evaluation needs the model's tokenizer.json ` +
        "(a merge folder without one uses its base model's)",
    );
  const tokenizerJson = parseObject(files.tokenizerJson, tokenizerPath);
  const configPath = `${origin}/tokenizer_config.json`;
  const config = files.tokenizerConfig === undefined ? {} : parseObject(files.tokenizerConfig, configPath);

  const model = tokenizerJson.model;
  if (typeof model !== 'object' || model === null || Array.isArray(model))
    throw new Error(`${tokenizerPath}: no "model" object, so not a tokenizers (Hugging Face) tokenizer file`);
  const modelType = (model as Record<string, unknown>).type;
  if (typeof modelType === 'string' && !SUPPORTED_MODELS.includes(modelType))
    throw new Error(
      `${tokenizerPath}: tokenizer model type "${modelType}" is not supported (supported: ${SUPPORTED_MODELS.join(', ')})`,
    );

  let tokenizer: Tokenizer;
  try {
    tokenizer = new Tokenizer(tokenizerJson, config);
  } catch (error) {
    throw new Error(`${tokenizerPath}: cannot be loaded: ${(error as Error).message}`, { cause: error });
  }

  let vocabSize = 0;
  for (const id of tokenizer.get_vocab(true).values()) vocabSize = Math.max(vocabSize, id + 1);

  const tokenId = (field: string): number | undefined => {
    const name = tokenName(config[field]);
    if (name === undefined) return undefined;
    const id = tokenizer.token_to_id(name);
    if (id === undefined)
      throw new Error(`${configPath}: ${field} "${name}" is not a token of ${tokenizerPath}`);
    return id;
  };

  const eos = new Set<number>();
  const configEos = tokenId('eos_token');
  if (configEos !== undefined) eos.add(configEos);
  for (const [text, name] of [
    [files.configJson, 'config.json'],
    [files.generationConfigJson, 'generation_config.json'],
  ] as const) {
    if (text === undefined) continue;
    for (const id of eosTokenIds(parseObject(text, `${origin}/${name}`), `${origin}/${name}`)) eos.add(id);
  }
  for (const id of options.extraEosIds ?? []) {
    if (!Number.isInteger(id) || id < 0)
      throw new Error(`${origin}: end-of-sequence id ${id} is not a token id`);
    eos.add(id);
  }

  // transformers 5 cleans up decoded spaces only where the config asks, and never for a BPE model
  // unless forced (the clean-up strips real spaces before punctuation). tokenizers.js would clean
  // up whenever the config does not say, so the option is always passed.
  // (tokenizers.js infers BPE from "merges" where the type is left out.)
  const isBpe = modelType === 'BPE' || (modelType === undefined && 'merges' in model);
  const cleanUp =
    config.clean_up_tokenization_spaces === true &&
    (!isBpe || config.clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output === true);

  const templateSource = chatTemplateSource(files.chatTemplate, config, configPath);
  let template: Template | undefined;
  // The variables transformers hands the template: the special tokens the config names.
  const specialTokens: Record<string, string> = {};
  for (const field of ['bos_token', 'eos_token', 'unk_token', 'pad_token']) {
    const name = tokenName(config[field]);
    if (name !== undefined) specialTokens[field] = name;
  }

  const encode = (text: string, addSpecialTokens: boolean): number[] =>
    tokenizer.encode(text, { add_special_tokens: addSpecialTokens }).ids;

  const renderChat = (text: string): string => {
    if (templateSource === undefined)
      throw new Error(
        `${origin}: no chat template (chat_template.jinja, or chat_template in tokenizer_config.json), which --chat needs`,
      );
    const where = files.chatTemplate !== undefined ? `${origin}/chat_template.jinja` : configPath;
    try {
      template ??= new Template(templateSource);
      return template.render({
        ...specialTokens,
        messages: [{ role: 'user', content: text }],
        add_generation_prompt: true,
      });
    } catch (error) {
      throw new Error(`${where}: the chat template fails: ${(error as Error).message}`, { cause: error });
    }
  };

  return {
    origin,
    vocabSize,
    eosIds: [...eos].sort((a, b) => a - b),
    bosId: tokenId('bos_token'),
    hasChatTemplate: templateSource !== undefined,
    renderChat,
    encodePrompt: (text, { chat }) => (chat ? encode(renderChat(text), false) : encode(text, true)),
    encodeCompletion: (text) => encode(text, false),
    decode(ids, { skipSpecialTokens = false } = {}) {
      // transformers drops ids without a token (an embedding padded past the tokenizer, say);
      // tokenizers.js would decode them as undefined, and refuses an empty list.
      const known = ids.filter((id) => Number.isInteger(id) && tokenizer.id_to_token(id) !== undefined);
      if (known.length === 0) return '';
      return tokenizer.decode(known, {
        skip_special_tokens: skipSpecialTokens,
        clean_up_tokenization_spaces: cleanUp,
      });
    },
  };
}

function parseObject(text: string, path: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not valid JSON (${(error as Error).message})`, { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${path}: expected a JSON object`);
  return value as Record<string, unknown>;
}

/** A special token as tokenizer_config.json writes it: a string, or an AddedToken {content}. */
function tokenName(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { content?: unknown }).content === 'string'
  )
    return (value as { content: string }).content;
  return undefined;
}

/** eos_token_id of config.json or generation_config.json: absent, null, an id or a list of ids. */
function eosTokenIds(config: Record<string, unknown>, path: string): number[] {
  const value = config.eos_token_id;
  if (value === undefined || value === null) return [];
  const ids = Array.isArray(value) ? (value as unknown[]) : [value];
  for (const id of ids)
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0)
      throw new Error(
        `${path}: eos_token_id must be a token id or a list of them, got ${JSON.stringify(value)}`,
      );
  return ids as number[];
}

/**
 * The chat template's source: chat_template.jinja, else tokenizer_config.json's chat_template,
 * a string or a list of named templates of which "default" is the one a plain chat uses.
 */
function chatTemplateSource(
  jinjaFile: string | undefined,
  config: Record<string, unknown>,
  configPath: string,
): string | undefined {
  if (jinjaFile !== undefined) return jinjaFile;
  const value = config.chat_template;
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const names: string[] = [];
    for (const entry of value as unknown[]) {
      const { name, template } = (entry ?? {}) as { name?: unknown; template?: unknown };
      if (typeof name === 'string') names.push(name);
      if (name === 'default' && typeof template === 'string') return template;
    }
    throw new Error(
      `${configPath}: chat_template lists no "default" template (it has: ${names.join(', ') || 'none'})`,
    );
  }
  throw new Error(`${configPath}: chat_template must be a string or a list of {name, template}`);
}

// A model folder as evaluation sees it: the forward pass's spec from config.json, its tensors, and the
// tokenizer files (tokenizer.json, tokenizer_config.json, chat_template.jinja) — read from the folder's
// own files, whatever the host (Node files, the browser's picked folders or OPFS).

import type { Model } from '../format/model.ts';
import { EvalError, forwardSpec } from './config.ts';
import type { EvalModel } from './evaluate.ts';
import type { TokenizerFiles } from './tokenize.ts';
import { folderWeights } from './weights.ts';

const MAX_TOKENIZER_BYTES = 64 * 2 ** 20;
const utf8 = new TextDecoder('utf-8', { fatal: true });

async function readText(model: Model, name: string): Promise<string | undefined> {
  const file = model.files.find((f) => f.name === name);
  if (!file) return undefined;
  if (file.source.size > MAX_TOKENIZER_BYTES)
    throw new EvalError(
      model.name,
      `${name} is ${file.source.size} bytes, more than a tokenizer file takes.`,
    );
  try {
    return utf8.decode(await file.source.read(0, file.source.size));
  } catch (error) {
    if (error instanceof TypeError) throw new EvalError(model.name, `${name} is not UTF-8 text.`);
    throw error;
  }
}

/** The folder's tokenizer files (tokenizerJson undefined where it has none) and its configs' eos ids. */
export async function tokenizerFiles(model: Model): Promise<TokenizerFiles> {
  return {
    tokenizerJson: await readText(model, 'tokenizer.json'),
    tokenizerConfig: await readText(model, 'tokenizer_config.json'),
    chatTemplate: await readText(model, 'chat_template.jinja'),
    configJson: model.configText,
    generationConfigJson: await readText(model, 'generation_config.json'),
  };
}

/** An opened model folder as an evaluation input, its spec checked against config.json. */
export function evalModel(
  model: Model,
  label: string,
  path: string,
  extraEos: readonly number[] = [],
): EvalModel {
  const spec = forwardSpec(label, model.config);
  const eosIds = [...new Set([...spec.eosIds, ...extraEos])];
  return {
    ref: { path, label },
    spec,
    weights: folderWeights(model, label),
    storedBytes: model.totalBytes,
    eosIds,
  };
}

/** Short distinct labels for model paths: the folder's name, with its parent's where two clash. */
export function labelsFor(paths: readonly string[]): string[] {
  const parts = paths.map((p) => p.replace(/[\\/]+$/, '').split(/[\\/]/));
  const labels = parts.map((p) => p[p.length - 1] ?? '');
  for (let depth = 2; depth <= 4; depth++) {
    const counts = new Map<string, number>();
    for (const l of labels) counts.set(l, (counts.get(l) ?? 0) + 1);
    if ([...counts.values()].every((n) => n === 1)) return labels;
    labels.forEach((l, i) => {
      if ((counts.get(l) ?? 0) > 1) labels[i] = parts[i]!.slice(-depth).join('/');
    });
  }
  return labels.map((l, i) => (labels.indexOf(l) === i ? l : `${l} (${i + 1})`));
}

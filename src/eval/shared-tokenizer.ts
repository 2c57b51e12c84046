// The one tokenizer an evaluation shares across its models (SPEC.md, "Evaluation": the tokens are made
// once): the first model folder's that has a tokenizer.json, so a merge folder without one is read with
// its base's. The CLI and the studio choose it here, so both score the same tokens.

import type { Model } from '../format/model.ts';
import { EvalError } from './config.ts';
import { tokenizerFiles } from './model.ts';
import { loadTokenizer } from './tokenize.ts';

export const TOKENIZER_FILE = 'tokenizer.json';

/** The tokenizer of the first model that has a tokenizer.json, and that model's label. */
export async function sharedTokenizer(models: readonly { model: Model; label: string }[]) {
  const first = models.find(({ model }) => model.files.some((f) => f.name === TOKENIZER_FILE));
  if (!first)
    throw new EvalError(
      models.map((m) => m.label).join(', '),
      `none of these model folders has a ${TOKENIZER_FILE}; add the base's tokenizer files to one of them.`,
    );
  const tokenizer = await loadTokenizer(await tokenizerFiles(first.model), first.label);
  return { tokenizer, from: first.label };
}

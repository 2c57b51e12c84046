// The one tokenizer an evaluation shares across its models (SPEC.md, "Evaluation": the tokens are made
// once): the first model folder's that has a tokenizer.json, so a merge folder without one is read with
// its base's. A model whose own tokenizer.json differs is refused: its scores would be of other token
// sequences. The CLI and the studio choose it here, so both score the same tokens.

import type { Model } from '../format/model.ts';
import { EvalError } from './config.ts';
import { tokenizerFiles } from './model.ts';
import { loadTokenizer, type ModelTokenizer } from './tokenize.ts';

export const TOKENIZER_FILE = 'tokenizer.json';

export async function sharedTokenizer(
  models: readonly { model: Model; label: string }[],
): Promise<{ tokenizer: ModelTokenizer; from: string }> {
  let chosen: { files: Awaited<ReturnType<typeof tokenizerFiles>>; label: string } | undefined;
  for (const { model, label } of models) {
    if (!model.files.some((f) => f.name === TOKENIZER_FILE)) continue;
    const files = await tokenizerFiles(model);
    if (!chosen) chosen = { files, label };
    else if (files.tokenizerJson !== chosen.files.tokenizerJson)
      throw new EvalError(
        label,
        `its ${TOKENIZER_FILE} differs from ${chosen.label}'s; models are compared on the same tokens, so evaluate them in separate runs.`,
      );
  }
  if (!chosen)
    throw new EvalError(
      models.map((m) => m.label).join(', '),
      `none of these model folders has a ${TOKENIZER_FILE}; add the base's tokenizer files to one of them.`,
    );
  return { tokenizer: loadTokenizer(chosen.files, chosen.label), from: chosen.label };
}

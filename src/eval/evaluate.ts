// Probe scoring, as SPEC.md ("Evaluation") defines it: for every model, the NLL of each completion
// given its prompt, how many completion tokens are the model's argmax, and a greedy continuation of
// the prompt alone. The tokens are made once and shared by every model; each model runs streamed by
// layer over batches of examples sized to the memory budget.

import { throwIfAborted } from '../io/abort.ts';
import type { EvalBackend } from './backend.ts';
import { EvalError, type ForwardSpec } from './config.ts';
import { activationBytesPerRow, batchOf, ForwardRun } from './forward.ts';
import type { EvalExample, EvalModelRef, EvalResult, EvalSet, Probe } from './types.ts';
import type { WeightSource } from './weights.ts';

/** What evaluation needs of a tokenizer (src/eval/tokenize.ts makes one from the model's files). */
export interface EvalTokenizer {
  encodePrompt(text: string, options: { chat: boolean }): number[];
  encodeCompletion(text: string): number[];
  decode(ids: readonly number[]): string;
}

export interface EvalModel {
  ref: EvalModelRef;
  spec: ForwardSpec;
  weights: WeightSource;
  /** Bytes of its weights as stored: generation holds them on the device when they fit. */
  storedBytes: number;
  /** Ids that end a greedy generation (config.json's eos_token_id, else the tokenizer's). */
  eosIds: readonly number[];
}

export interface EvalProgress {
  phase: 'score' | 'generate';
  /** Index of the model being run, of `models`. */
  model: number;
  models: number;
  layer: number;
  layers: number;
  /** Generation: the new token being made (1-based) of maxNewTokens. */
  step: number;
  steps: number;
  /** Batch rows run through the model so far (all models). */
  rows: number;
  /** Whether generation holds the model's weights on the device or reads them again per token. */
  generation: 'held' | 'streamed';
}

export interface EvalOptions {
  chat?: boolean;
  maxNewTokens?: number;
  /** Bytes the activations and the output head's blocks may take (default 512 MiB). */
  memoryBudget?: number;
  signal?: AbortSignal;
  onProgress?: (progress: EvalProgress) => void;
}

interface Tokenized {
  prompt: number[];
  completion: number[];
}

/** The probes' tokens, made once: prompt ids (with chat template when asked) and completion ids. */
export function tokenizeProbes(
  tokenizer: EvalTokenizer,
  probes: readonly Probe[],
  chat: boolean,
): Tokenized[] {
  return probes.map((probe, i) => {
    const prompt = tokenizer.encodePrompt(probe.prompt, { chat });
    const completion = tokenizer.encodeCompletion(probe.completion);
    if (prompt.length === 0)
      throw new EvalError(
        `probe ${i + 1}`,
        'its prompt has no tokens, so its first completion token has nothing to be predicted from.',
      );
    if (completion.length === 0) throw new EvalError(`probe ${i + 1}`, 'its completion has no tokens.');
    return { prompt, completion };
  });
}

/** Splits examples (by index) into consecutive batches of at most `maxRows` rows (one at least). */
function batches(lengths: readonly number[], maxRows: number): number[][] {
  const out: number[][] = [];
  let current: number[] = [];
  let rows = 0;
  lengths.forEach((length, i) => {
    if (current.length && rows + length > maxRows) {
      out.push(current);
      current = [];
      rows = 0;
    }
    current.push(i);
    rows += length;
  });
  if (current.length) out.push(current);
  return out;
}

const DEFAULT_BUDGET = 512 * 2 ** 20;

interface RunContext {
  backend: EvalBackend;
  options: EvalOptions;
  progress: Omit<EvalProgress, 'layer' | 'layers' | 'phase' | 'step' | 'steps'>;
}

/** Runs `sequences` through a model, returning a ForwardRun positioned after the last layer. */
async function runThrough(
  ctx: RunContext,
  run: ForwardRun,
  sequences: readonly (readonly number[])[],
  phase: EvalProgress['phase'],
  step: number,
  steps: number,
) {
  const batch = batchOf(sequences);
  await run.embed(batch);
  for (let layer = 0; layer < run.spec.layers; layer++) {
    throwIfAborted(ctx.options.signal, 'The evaluation was cancelled.');
    await run.layer(layer, batch);
    ctx.options.onProgress?.({
      ...ctx.progress,
      phase,
      layer: layer + 1,
      layers: run.spec.layers,
      step,
      steps,
    });
  }
  ctx.progress.rows += batch.ids.length;
  return batch;
}

export async function evaluate(
  backend: EvalBackend,
  models: readonly EvalModel[],
  probes: readonly Probe[],
  tokenizer: EvalTokenizer,
  options: EvalOptions = {},
): Promise<EvalResult> {
  const chat = options.chat ?? false;
  const maxNew = options.maxNewTokens ?? 0;
  const budget = options.memoryBudget ?? DEFAULT_BUDGET;
  const tokens = tokenizeProbes(tokenizer, probes, chat);
  const examples: EvalExample[] = probes.map((probe, i) => ({
    set: probe.set,
    promptTokens: tokens[i]!.prompt.length,
    completionTokens: tokens[i]!.completion.length,
    nll: [],
    top1: [],
    generated: [],
    generatedText: [],
  }));
  const progress = {
    model: 0,
    models: models.length,
    rows: 0,
    generation: 'streamed' as EvalProgress['generation'],
  };
  const ctx: RunContext = { backend, options, progress };

  for (const model of models) {
    const { spec } = model;
    for (const [i, t] of tokens.entries()) {
      const length = t.prompt.length + t.completion.length;
      if (length > spec.maxPositions)
        throw new EvalError(
          model.ref.label,
          `probe ${i + 1} is ${length} tokens; the model's max_position_embeddings is ${spec.maxPositions}.`,
        );
      const top = Math.max(...t.prompt, ...t.completion);
      if (top >= spec.vocab)
        throw new EvalError(
          model.ref.label,
          `probe ${i + 1} has token id ${top}; the vocabulary has ${spec.vocab}.`,
        );
    }
  }

  // Scoring: prompt + completion, the rows before each completion token scored against it. Layer-major
  // across the models: layer i of every model runs before layer i + 1 of any, so the tensors a
  // candidate merge reads for layer i are those the base and the agents have just read (one pass over
  // the files, the rest from the page cache). All models' activations share half the budget.
  const lengths = tokens.map((t) => t.prompt.length + t.completion.length);
  const rowBytes = models.reduce((n, model) => n + activationBytesPerRow(model.spec), 0);
  const maxRows = Math.max(1, Math.floor(budget / 2 / rowBytes));
  for (const group of batches(lengths, maxRows)) {
    const batch = batchOf(group.map((i) => [...tokens[i]!.prompt, ...tokens[i]!.completion]));
    const runs = models.map((model) => new ForwardRun(backend, model.spec, model.weights));
    try {
      for (const run of runs) await run.embed(batch);
      const layers = Math.max(...models.map((model) => model.spec.layers));
      for (let layer = 0; layer < layers; layer++)
        for (const [m, run] of runs.entries()) {
          if (layer >= run.spec.layers) continue;
          throwIfAborted(options.signal, 'The evaluation was cancelled.');
          await run.layer(layer, batch);
          progress.model = m;
          options.onProgress?.({
            ...progress,
            phase: 'score',
            layer: layer + 1,
            layers: run.spec.layers,
            step: 0,
            steps: maxNew,
          });
        }
      progress.rows += batch.ids.length * runs.length;
      const rows: number[] = [];
      const targets: number[] = [];
      group.forEach((i, g) => {
        const { prompt, completion } = tokens[i]!;
        const start = batch.starts[g]!;
        completion.forEach((id, j) => {
          rows.push(start + prompt.length - 1 + j);
          targets.push(id);
        });
      });
      for (const [m, run] of runs.entries()) {
        // The output head's blocks take at most a quarter of the budget.
        const chunkBytes = Math.max(run.spec.hidden * 4, Math.floor(budget / 4));
        const scores = await run.score(
          Int32Array.from(rows),
          Int32Array.from(targets),
          chunkBytes,
          options.signal,
        );
        run.release();
        let r = 0;
        for (const i of group) {
          let nll = 0;
          let top1 = 0;
          for (let j = 0; j < tokens[i]!.completion.length; j++, r++) {
            nll -= scores.logprob[r]!;
            if (scores.argmax[r] === targets[r]) top1++;
          }
          examples[i]!.nll[m] = nll;
          examples[i]!.top1[m] = top1;
        }
      }
    } finally {
      for (const run of runs) run.release();
    }
  }

  for (const [m, model] of models.entries()) {
    const { spec } = model;
    progress.model = m;
    const maxRows = Math.max(1, Math.floor(budget / 2 / activationBytesPerRow(spec)));
    const chunkBytes = Math.max(spec.hidden * 4, Math.floor(budget / 4));

    // Generation: greedy from the prompt alone, the whole model run again per new token (held on the
    // device when its weights fit half the budget, else read again for every token).
    const generated = tokens.map(() => [] as number[]);
    if (maxNew > 0) {
      const hold = model.storedBytes <= budget / 2;
      progress.generation = hold ? 'held' : 'streamed';
      for (const group of batches(
        tokens.map((t) => t.prompt.length + maxNew),
        maxRows,
      )) {
        const run = new ForwardRun(backend, spec, model.weights, hold);
        try {
          let active = group.filter((i) => tokens[i]!.prompt.length < spec.maxPositions);
          for (let step = 1; step <= maxNew && active.length; step++) {
            const sequences = active.map((i) => [...tokens[i]!.prompt, ...generated[i]!]);
            const batch = await runThrough(ctx, run, sequences, 'generate', step, maxNew);
            const last = Int32Array.from(sequences.map((s, g) => batch.starts[g]! + s.length - 1));
            const scores = await run.score(
              last,
              new Int32Array(last.length).fill(-1),
              chunkBytes,
              options.signal,
            );
            active.forEach((i, g) => generated[i]!.push(scores.argmax[g]!));
            active = active.filter((i) => {
              const ids = generated[i]!;
              const done = model.eosIds.includes(ids[ids.length - 1]!);
              return !done && tokens[i]!.prompt.length + ids.length < spec.maxPositions;
            });
          }
        } finally {
          run.release();
        }
      }
    }
    for (const [i, ids] of generated.entries()) {
      examples[i]!.generated[m] = ids;
      examples[i]!.generatedText[m] = tokenizer.decode(ids);
    }
  }

  const sets: EvalSet[] = [];
  for (const example of examples) {
    let set = sets.find((s) => s.set === example.set);
    if (!set) {
      set = { set: example.set, tokens: 0, meanNll: models.map(() => 0), top1Rate: models.map(() => 0) };
      sets.push(set);
    }
    set.tokens += example.completionTokens;
    for (let m = 0; m < models.length; m++) {
      set.meanNll[m]! += example.nll[m]!;
      set.top1Rate[m]! += example.top1[m]!;
    }
  }
  for (const set of sets)
    for (let m = 0; m < models.length; m++) {
      set.meanNll[m]! /= set.tokens;
      set.top1Rate[m]! /= set.tokens;
    }
  return { models: models.map((model) => model.ref), examples, sets };
}

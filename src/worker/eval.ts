// The engine worker's evaluation jobs (issue 34): probe scoring of loaded models, merges and candidate
// merges (merged tensor by tensor as they are read, never written), the agents writing their own
// reference completions first where asked, and greedy continuations of one prompt side by side. They run evaluate() (src/eval) on the worker's GPU device, or on the CPU
// reference where the worker has none, so the numbers are those `merge-studio eval` writes.
import type { AnalysisResult } from '../driver/job.ts';
import type { MergeEngine } from '../engine/contract.ts';
import type { EvalBackend } from '../eval/backend.ts';
import { candidateWeights } from '../eval/candidate.ts';
import { createCpuEvalBackend } from '../eval/cpu-backend.ts';
import { evaluate, type EvalModel, type EvalOptions, type EvalProgress } from '../eval/evaluate.ts';
import { createGpuEvalBackend } from '../eval/gpu/gpu-backend.ts';
import { evalModel } from '../eval/model.ts';
import { parseProbes } from '../eval/probes.ts';
import { sharedTokenizer } from '../eval/shared-tokenizer.ts';
import type { ModelTokenizer } from '../eval/tokenize.ts';
import type { Probe } from '../eval/types.ts';
import type { Model } from '../format/model.ts';
import { throwIfAborted } from '../io/abort.ts';
import { validateParams } from '../methods/defaults.ts';
import { acquireDevice, memoryBudget, withEngine } from './engines.ts';
import { refusal } from './errors.ts';
import { agentModels, model, openTarget, recalledAnalysis } from './models.ts';
import type {
  EvalCandidates,
  EvalJobProgress,
  EvalProbes,
  EvalTarget,
  ProbeFileText,
  WorkerCalls,
} from './protocol.ts';

export interface EvalJobContext {
  signal: AbortSignal;
  progress: (progress: EvalJobProgress) => void;
}

type Call<K extends 'eval' | 'generate'> = (
  request: WorkerCalls[K]['request'],
  context: EvalJobContext,
) => Promise<WorkerCalls[K]['result']>;

type Tokenizer = ModelTokenizer;

const CANCELLED = 'The evaluation was cancelled.';
/** Progress is posted at most this often (per layer of a small model would flood the page). */
const PROGRESS_MS = 100;

/** A backend on the worker's device: the WGSL forward pass, or the CPU reference without a GPU. */
async function withBackend<T>(run: (backend: EvalBackend) => Promise<T>): Promise<T> {
  const found = await acquireDevice();
  const backend = 'error' in found ? createCpuEvalBackend() : createGpuEvalBackend(found.device);
  try {
    return await run(backend);
  } finally {
    backend.destroy();
  }
}

/**
 * Opens every target and the shared tokenizer; each model stops generating at its own EOS and the
 * tokenizer's. `also`: models not scored whose tokenizer must agree (the base of candidate merges).
 */
async function openModels(
  targets: readonly EvalTarget[],
  signal: AbortSignal,
  also: readonly Model[] = [],
): Promise<{ models: EvalModel[]; tokenizer: Tokenizer }> {
  if (targets.length === 0 && also.length === 0)
    throw refusal('NothingToEvaluate', 'Choose at least one model to evaluate.');
  const opened = [];
  for (const t of targets) {
    opened.push({ model: await openTarget(t.target), label: t.label, path: t.path });
    throwIfAborted(signal, CANCELLED);
  }
  const { tokenizer } = await sharedTokenizer([...opened, ...also.map((m) => ({ model: m, label: m.name }))]);
  const models = opened.map((o) => evalModel(o.model, o.label, o.path, tokenizer.eosIds));
  return { models, tokenizer };
}

/** evaluate()'s options for one pass, its progress posted (throttled) with the pass and the model's label. */
function passOptions(
  context: EvalJobContext,
  pass: EvalJobProgress['pass'],
  backend: EvalBackend,
  models: readonly EvalModel[],
  offset: { model: number; models: number },
): EvalOptions {
  let last = 0;
  let lastKey = '';
  return {
    signal: context.signal,
    memoryBudget: memoryBudget(),
    onProgress(progress: EvalProgress) {
      const now = performance.now();
      const key = `${progress.model}:${progress.phase}`;
      // A new model or phase is shown at once; layers and steps within one are throttled.
      if (key === lastKey && now - last < PROGRESS_MS) return;
      last = now;
      lastKey = key;
      context.progress({
        ...progress,
        model: offset.model + progress.model,
        models: offset.models,
        pass,
        label: models[progress.model]?.ref.label ?? '',
        backend: backend.name,
      });
    },
  };
}

/** A prompt asked of a model: evaluate() scores a completion too, so the prompt stands in for one. */
function asked(prompt: string, set: string): Probe {
  return { prompt, completion: prompt, set };
}

/**
 * Each writer's greedy continuation of each prompt, as a probe of the set named by its label. A
 * continuation that ends the sequence at once has nothing to score and is left out.
 */
async function writeReferences(
  backend: EvalBackend,
  writers: readonly EvalModel[],
  prompts: readonly string[],
  tokens: number,
  tokenizer: Tokenizer,
  chat: boolean,
  context: EvalJobContext,
): Promise<Probe[]> {
  const probes: Probe[] = [];
  for (const [w, writer] of writers.entries()) {
    const set = writer.ref.label;
    const result = await evaluate(
      backend,
      [writer],
      prompts.map((p) => asked(p, set)),
      tokenizer,
      {
        ...passOptions(context, 'references', backend, [writer], { model: w, models: writers.length }),
        chat,
        maxNewTokens: tokens,
      },
    );
    for (const [i, example] of result.examples.entries()) {
      const ids = example.generated[0] ?? [];
      // The end-of-sequence token ends the generation; it is no part of what the agent wrote.
      const end =
        ids.length > 0 && writer.eosIds.includes(ids[ids.length - 1]!) ? ids.length - 1 : ids.length;
      const completion = tokenizer.decode(ids.slice(0, end));
      if (tokenizer.encodeCompletion(completion).length > 0)
        probes.push({ prompt: prompts[i]!, completion, set });
    }
  }
  return probes;
}

/** The probes of JSONL files; a bad line is refused naming its file and line. */
function probesOf(files: readonly ProbeFileText[]): Probe[] {
  if (files.length === 0) throw refusal('NoProbes', 'Choose a probe file (JSONL) first.');
  return files.flatMap((f) => parseProbes(f.text, f.name));
}

/** The probes the writers write: their continuations of the prompts (writeReferences). */
async function writtenProbes(
  source: Extract<EvalProbes, { kind: 'references' }>,
  backend: EvalBackend,
  tokenizer: Tokenizer,
  chat: boolean,
  context: EvalJobContext,
): Promise<Probe[]> {
  const prompts = source.prompts.filter((p) => p.trim() !== '');
  if (prompts.length === 0)
    throw refusal('NoProbes', 'Write at least one prompt for the agents to continue.');
  if (source.writers.length === 0)
    throw refusal('NoProbes', 'Load an agent to write the reference completions.');
  if (!(source.tokens > 0)) throw refusal('NoProbes', 'The agents must write at least one token per prompt.');
  const { models: writers } = await openModels(source.writers, context.signal);
  const probes = await writeReferences(backend, writers, prompts, source.tokens, tokenizer, chat, context);
  if (probes.length === 0)
    throw refusal('NoProbes', 'Every agent ended each prompt at once: there is nothing to score.');
  return probes;
}

/** The candidates' parameters, checked before any model is read: a bad one is refused by its label. */
function checkCandidates(candidates: EvalCandidates): void {
  for (const { label, params } of candidates.recipes) {
    const problems = validateParams(params, candidates.agents.length);
    if (problems.length) throw refusal('BadCandidate', `The candidate ${label}: ${problems.join('; ')}.`);
  }
}

/**
 * The candidate merges as evaluation inputs (the CLI's --candidate): the base's spec and EOS ids, each
 * tensor merged by `engine` when the forward pass reads it. RAM+ and RAM+s share one statistics pass
 * per ε, the studio's own where the worker still holds it for these models.
 */
async function candidateModels(
  candidates: EvalCandidates,
  engine: MergeEngine,
  eosIds: readonly number[],
  signal: AbortSignal,
): Promise<EvalModel[]> {
  const base = model(candidates.base);
  const agents = await agentModels(base, candidates.agents);
  const analyses = new Map<number, Promise<AnalysisResult>>();
  for (const { params } of candidates.recipes) {
    const known = recalledAnalysis(candidates.base, candidates.agents, params.epsilon, undefined);
    if (known) analyses.set(params.epsilon, Promise.resolve(known));
  }
  const out: EvalModel[] = [];
  for (const recipe of candidates.recipes) {
    const weights = await candidateWeights({ base, agents, engine, analyses, signal }, recipe);
    out.push({ ...evalModel(base, recipe.label, `merge: ${recipe.label}`, eosIds), weights });
    throwIfAborted(signal, CANCELLED);
  }
  return out;
}

export const evaluateModels: Call<'eval'> = async (request, context) => {
  const source = request.probes;
  // Probe files and candidates are checked before any model is opened: a bad one is refused at once.
  const parsed = source.kind === 'files' ? probesOf(source.files) : null;
  const candidates = request.candidates?.recipes.length ? request.candidates : null;
  if (candidates) checkCandidates(candidates);
  const also = candidates ? [model(candidates.base)] : [];
  const { models, tokenizer } = await openModels(request.models, context.signal, also);
  return withBackend(async (backend) => {
    const probes =
      parsed ??
      (source.kind === 'references'
        ? await writtenProbes(source, backend, tokenizer, request.chat, context)
        : []);
    const score = (merged: readonly EvalModel[]) => {
      const all = [...models, ...merged];
      return evaluate(backend, all, probes, tokenizer, {
        ...passOptions(context, 'score', backend, all, { model: 0, models: all.length }),
        chat: request.chat,
        maxNewTokens: request.maxNewTokens,
      });
    };
    if (!candidates) return score([]);
    // The engine a merge would use, held while the candidates are scored (their tensors are merged then).
    return withEngine(candidates.agents.length, async (engine) =>
      score(await candidateModels(candidates, engine, tokenizer.eosIds, context.signal)),
    );
  });
};

export const generateSideBySide: Call<'generate'> = async (request, context) => {
  if (request.prompt.trim() === '') throw refusal('NoPrompt', 'Write a prompt first.');
  if (!(request.maxNewTokens > 0)) throw refusal('NoPrompt', 'Ask for at least one new token.');
  const { models, tokenizer } = await openModels(request.models, context.signal);
  const result = await withBackend((backend) =>
    evaluate(backend, models, [asked(request.prompt, 'prompt')], tokenizer, {
      ...passOptions(context, 'score', backend, models, { model: 0, models: models.length }),
      chat: request.chat,
      maxNewTokens: request.maxNewTokens,
    }),
  );
  const example = result.examples[0];
  return { models: result.models, texts: example?.generatedText ?? [], ids: example?.generated ?? [] };
};

// The committed evaluation fixtures (scripts/eval-fixtures.py): tiny Llama / Mistral / Qwen2 / Qwen3
// folders with transformers' own NLL, top-1 and greedy ids, opened as the studio and the CLI open them.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openModel, type Model } from '../format/model.ts';
import { memorySource } from '../io/source.ts';
import type { EvalModel, EvalTokenizer } from '../eval/evaluate.ts';
import { candidateWeights, type CandidateRecipe } from '../eval/candidate.ts';
import { evalModel } from '../eval/model.ts';
import { mergeModels } from '../driver/driver.ts';
import type { MergeEngine } from '../engine/contract.ts';
import { memoryFolder } from '../io/sink.ts';
import type { EvalResult, Probe } from '../eval/types.ts';

/**
 * The fixture root: the committed one, or EVAL_FIXTURES=DIR for a set freshly made by
 * `scripts/eval-fixtures.py --out DIR --seed N` (the same tests then check those).
 */
export const EVAL_FIXTURES =
  process.env.EVAL_FIXTURES ?? new URL('./eval-fixtures/', import.meta.url).pathname;

/** Every fixture model folder, by its path under eval-fixtures/ (qwen2-set's three included). */
export const EVAL_FIXTURE_MODELS = [
  'llama',
  'llama3',
  'llama-linear',
  'mistral',
  'qwen2',
  'qwen3',
  'qwen2-set/base',
  'qwen2-set/agent-0',
  'qwen2-set/agent-1',
] as const;

export interface ProbeReference {
  promptIds: number[];
  completionIds: number[];
  nll: number;
  top1: number;
  argmax: number[];
  /** Top logit minus the second, per completion position (near-ties excuse a different argmax). */
  margins: number[];
  generated: number[];
  generatedMargins: number[];
  generatedText: string;
}

export interface FixtureReference {
  model: string;
  architecture: string;
  eosIds: number[];
  maxNewTokens: number;
  probes: {
    index: number;
    set: string;
    prompt: string;
    completion: string;
    plain: ProbeReference;
    chat: ProbeReference;
  }[];
}

export function fixtureDir(name: string): string {
  return join(EVAL_FIXTURES, name);
}

/** A fixture folder opened from memory, as openModel opens any folder's files. */
export async function openFixture(name: string): Promise<Model> {
  const dir = fixtureDir(name);
  const files = readdirSync(dir).map((file) => ({
    name: file,
    source: memorySource(file, new Uint8Array(readFileSync(join(dir, file)))),
  }));
  return openModel(name, files);
}

export function fixtureReference(name: string): FixtureReference {
  return JSON.parse(readFileSync(join(fixtureDir(name), 'reference.json'), 'utf8')) as FixtureReference;
}

export function fixtureProbes(reference: FixtureReference): Probe[] {
  return reference.probes.map((p) => ({ prompt: p.prompt, completion: p.completion, set: p.set }));
}

/**
 * A tokenizer that answers with transformers' recorded ids: the forward pass checked apart from the
 * tokenizer (src/eval/tokenize.test.ts checks that one against the same ids).
 */
export function recordedTokenizer(reference: FixtureReference): EvalTokenizer {
  const byPrompt = new Map(reference.probes.map((p) => [p.prompt, p]));
  const byCompletion = new Map(reference.probes.map((p) => [p.completion, p]));
  return {
    encodePrompt: (text, { chat }) => byPrompt.get(text)![chat ? 'chat' : 'plain'].promptIds,
    encodeCompletion: (text) => byCompletion.get(text)!.plain.completionIds,
    decode: (ids) => ids.join(' '),
  };
}

/** Margins below this are ties within f32 rounding: a different argmax there is not a failure. */
export const NEAR_TIE = 1e-3;

/**
 * Where an evaluation differs from transformers' reference (empty: it agrees): NLL within `relative`,
 * top-1 counts equal but for positions whose recorded margin is a near-tie, greedy ids equal up to
 * the first near-tie step.
 */
export function referenceMismatches(
  result: EvalResult,
  model: number,
  reference: FixtureReference,
  mode: 'plain' | 'chat',
  relative: number,
  /** Greedy ids generated (max-new-tokens), where fewer than the reference's were asked for. */
  generatedUpTo = Infinity,
): string[] {
  const problems: string[] = [];
  reference.probes.forEach((probe, i) => {
    const ref = probe[mode];
    const got = result.examples[i]!;
    const where = `${reference.model} ${mode} probe ${i}`;
    const nll = got.nll[model]!;
    if (!(Math.abs(nll - ref.nll) <= relative * Math.abs(ref.nll)))
      problems.push(
        `${where}: nll ${nll} vs transformers ${ref.nll} (relative ${Math.abs(nll - ref.nll) / ref.nll})`,
      );
    const ties = ref.margins.filter((m) => m < NEAR_TIE).length;
    if (Math.abs(got.top1[model]! - ref.top1) > ties)
      problems.push(`${where}: top1 ${got.top1[model]} vs transformers ${ref.top1} (${ties} near-ties)`);
    const tie = ref.generatedMargins.slice(0, generatedUpTo).findIndex((m) => m < NEAR_TIE);
    const upTo = Math.min(generatedUpTo, tie < 0 ? ref.generated.length : tie + 1);
    const generated = got.generated[model]!;
    if (JSON.stringify(generated.slice(0, upTo)) !== JSON.stringify(ref.generated.slice(0, upTo)))
      problems.push(
        `${where}: generated [${generated.join(', ')}] vs transformers [${ref.generated.join(', ')}]`,
      );
    else if (tie < 0 && generated.length !== Math.min(generatedUpTo, ref.generated.length))
      problems.push(`${where}: generated ${generated.length} ids, transformers ${ref.generated.length}`);
  });
  return problems;
}

/**
 * A recipe two ways: as a candidate scored unwritten (candidateWeights) and as the folder mergeModels
 * writes (in memory), both ready for evaluate(); the two must score alike.
 */
export async function sweptAndWritten(
  base: Model,
  agents: Model[],
  engine: MergeEngine,
  recipe: CandidateRecipe,
): Promise<{ swept: EvalModel; written: EvalModel }> {
  const baseModel = evalModel(base, 'base', 'base');
  const swept = {
    ...baseModel,
    ref: { path: recipe.label, label: recipe.label },
    weights: await candidateWeights({ base, agents, engine }, recipe),
  };
  const out = memoryFolder(recipe.label);
  await mergeModels({
    base,
    agents,
    engine,
    params: recipe.params,
    ...(recipe.outDtype ? { outDtype: recipe.outDtype } : {}),
    out,
    baseLabel: 'base',
    agentLabels: agents.map((_, t) => `agent-${t}`),
  });
  const folder = await openModel(
    recipe.label,
    [...out.files].map(([name, bytes]) => ({ name, source: memorySource(name, bytes) })),
  );
  return { swept, written: evalModel(folder, recipe.label, recipe.label) };
}

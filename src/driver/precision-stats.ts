// What the read precision removed: each agent's changed elements at D (the statistics) beside those at
// stored precision, counted again only on the tensors D rounds; and for a set stored all in f32 where
// nearly every element changed, the count at bf16, with a hint (SPEC.md "Inputs stored in other
// precisions": at stored precision an f32 agent's τ is dense, and RAM quietly becomes an average).

import type { FloatDtype } from '../format/dtype.ts';
import { analyzeModels, mergeableTensors } from './driver.ts';
import { checkCompatibility } from '../format/compat.ts';
import type { AnalysisResult, ModelsInput, PrecisionSummary } from './job.ts';
import { roundedTensors, tensorDtypes } from './read-precision.ts';
import { isMaterialised } from './adapter-model.ts';
import type { Model } from '../format/model.ts';

/** An agent's changed share at or above this, in a set stored all in f32, earns the hint. */
export const DENSE_SHARE = 0.9;

export type { PrecisionSummary };

const percent = (n: number, of: number): string => `${of > 0 ? ((100 * n) / of).toFixed(1) : '0.0'}%`;

function dtypeWord(dtype: FloatDtype | 'stored'): string {
  return dtype === 'stored' ? 'stored precision' : dtype.toLowerCase();
}

/**
 * The counts at both precisions, from `analysis` (the statistics at D) and a second statistics pass
 * over only the tensors that need one. `labels`: the agents' names for the lines.
 */
export async function comparePrecisions(
  input: ModelsInput & { epsilon: number },
  analysis: AnalysisResult,
  labels: readonly string[],
): Promise<PrecisionSummary> {
  const models = [input.base, ...input.agents];
  const names = mergeableTensors(input.base, checkCompatibility(input.base, input.agents)).map((t) => t.name);
  const atRead = analysis.totals.changed;
  const numel = analysis.totals.numel;
  const rounded = roundedTensors(models, names, input.readDtype);
  const summary: PrecisionSummary = {
    readDtype: input.readDtype ?? 'default',
    roundedTensors: rounded.length,
    numel,
    changedAtRead: [...atRead],
    changedStored: [...atRead],
    lines: [],
  };
  if (rounded.length > 0) {
    const stored = await analyzeModels({ ...input, readDtype: 'stored', only: new Set(rounded) });
    const byName = new Map(analysis.tensors.map((t) => [t.name, t.changed]));
    summary.changedStored = atRead.map((n, t) => {
      let sum = n;
      for (const s of stored.tensors) sum += (s.changed[t] ?? 0) - (byName.get(s.name)?.[t] ?? 0);
      return sum;
    });
    const read = tensorDtypes(models, rounded[0] ?? '', input.readDtype).read;
    summary.lines = summary.changedStored.map(
      (n, t) =>
        `${labels[t] ?? `agent ${t + 1}`}: ${percent(n, numel)} of elements differ at stored precision, ` +
        `${percent(atRead[t] ?? 0, numel)} at ${dtypeWord(read)}.`,
    );
    return summary;
  }
  const allF32 = names.every((name) => tensorDtypes(models, name, input.readDtype).read === 'F32');
  const dense = atRead.some((n) => n >= DENSE_SHARE * numel);
  if (allF32 && dense && names.length > 0) {
    const bf16 = await analyzeModels({ ...input, readDtype: 'BF16' });
    summary.changedBf16 = bf16.totals.changed;
    summary.lines = atRead.map(
      (n, t) =>
        `${labels[t] ?? `agent ${t + 1}`}: ${percent(n, numel)} of elements differ at f32, ` +
        `${percent(bf16.totals.changed[t] ?? 0, numel)} at bf16.`,
    );
    summary.lines.push(
      `At ε = ${input.epsilon} nearly every element of an f32 agent counts as changed (sub-ulp optimiser ` +
        'steps), so RAM becomes an average: compare at bf16 (--read-dtype bf16) or raise --epsilon.',
    );
  }
  return summary;
}

/**
 * Whether the summary says something: a read precision asked, tensors rounded, the bf16 counts or a
 * line. A set read as stored with nothing to say keeps its statistics JSON without the block, as
 * `analyze --json` and the studio's export both write it.
 */
export function informative(summary: PrecisionSummary): boolean {
  return (
    summary.readDtype !== 'default' ||
    summary.roundedTensors > 0 ||
    summary.changedBf16 !== undefined ||
    summary.lines.length > 0
  );
}

/**
 * The precision summary of `analyze`: the counts at both precisions and the LoRA agents' lines, or
 * undefined where it says nothing (informative).
 */
export async function precisionSummary(
  input: ModelsInput & { epsilon: number },
  analysis: AnalysisResult,
  labels: readonly string[],
): Promise<PrecisionSummary | undefined> {
  const summary = await comparePrecisions(input, analysis, labels);
  summary.lines.push(...adapterLines(input.agents, analysis, labels));
  return informative(summary) ? summary : undefined;
}

/**
 * One line per LoRA adapter agent: its τ is dense in the tensors it adapts and zero elsewhere
 * (SPEC.md), so RAM counts every element of its target modules as changed by it.
 */
export function adapterLines(
  agents: readonly Model[],
  analysis: AnalysisResult,
  labels: readonly string[],
): string[] {
  return agents.flatMap((agent, t) => {
    const adapted = analysis.tensors.filter((s) => isMaterialised(agent.tensors.get(s.name)));
    if (adapted.length === 0) return [];
    const numel = adapted.reduce((sum, s) => sum + s.numel, 0);
    const changed = adapted.reduce((sum, s) => sum + (s.changed[t] ?? 0), 0);
    const elsewhere = (analysis.totals.changed[t] ?? 0) - changed;
    return [
      `${labels[t] ?? `agent ${t + 1}`} is a LoRA adapter: its τ is dense in the ${adapted.length} tensors it adapts ` +
        `(${percent(changed, numel)} of their elements changed) and ${elsewhere === 0 ? 'zero' : `${elsewhere} elements`} ` +
        'elsewhere, so RAM counts every element of its target modules as its change, shared wherever another agent adapts them too.',
    ];
  });
}

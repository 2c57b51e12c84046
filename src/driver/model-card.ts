// The model card (README.md) and the files a merged Hugging Face folder carries beside its weights:
// the base's tokenizer and generation files copied as they are, text files written whole. The card's
// method notes (tie rules, DARE's rescale) come from the method registry.
import packageJson from '../../package.json' with { type: 'json' };
import type { FloatDtype } from '../format/dtype.ts';
import type { ReadDtype } from '../format/precision.ts';
import type { Model } from '../format/model.ts';
import type { FolderSink } from '../io/sink.ts';
import { dtypeToYaml, toMergekitYaml, type Recipe } from '../methods/recipe.ts';
import { methodOf } from '../methods/registry/index.ts';
import { paramsRecord } from '../methods/defaults.ts';
import { specOf, USER_PARAMS } from '../methods/params.ts';
import type { MethodParams } from '../methods/types.ts';
import type { AnalysisResult, InputFile, MergeJob, WrittenFile } from './job.ts';

export const TOOL_NAME = 'merge-studio';
/** From package.json, so the model card names the version that actually wrote it. */
export const TOOL_VERSION: string = packageJson.version;

/** Files a Hugging Face model folder carries beside its weights, copied from the base as they are. */
export function isCompanionFile(name: string): boolean {
  return (
    /^tokenizer.*\.(json|model)$/.test(name) ||
    /^(special_tokens_map|added_tokens|generation_config|preprocessor_config)\.json$/.test(name) ||
    /^vocab\.(json|txt)$/.test(name) ||
    name === 'merges.txt' ||
    /^chat_template.*\.(jinja|json)$/.test(name) ||
    /\.tiktoken$/.test(name)
  );
}

export async function writeText(
  out: FolderSink,
  file: string,
  text: string,
  written: WrittenFile[],
): Promise<void> {
  const bytes = new TextEncoder().encode(text);
  const sink = await out.create(file);
  try {
    await sink.write(bytes);
    await sink.close();
  } catch (error) {
    await sink.abort();
    throw error;
  }
  written.push({ file, bytes: bytes.length });
}

export async function copyFile(
  out: FolderSink,
  model: Model,
  file: string,
  written: WrittenFile[],
): Promise<void> {
  const entry = model.files.find((f) => f.name === file);
  if (!entry) return;
  const sink = await out.create(file);
  try {
    const chunk = 8 << 20;
    for (let offset = 0; offset < entry.source.size; offset += chunk)
      await sink.write(await entry.source.read(offset, Math.min(chunk, entry.source.size - offset)));
    await sink.close();
  } catch (error) {
    await sink.abort();
    throw error;
  }
  written.push({ file, bytes: entry.source.size });
}

/** The recipe as mergekit_config.yml and the card show it: the job's own, or its labels and params. */
export function recipeOf(job: MergeJob, outDtype: FloatDtype | undefined): Recipe {
  return job.recipe
    ? { ...job.recipe, outDtype }
    : { base: job.baseLabel, models: job.agentLabels, params: job.params, outDtype, labels: true };
}

/** The parameters the card's per-tensor table shows (specs with a `card` column), in table order. */
const CARD_COLUMNS = USER_PARAMS.filter((key) => specOf(key).card !== undefined);

/** What varied per tensor (gradients, filters), grouped so the card stays short. */
export function perTensorLines(used: Map<string, MethodParams>, labels: string[]): string[] {
  const groups = new Map<string, string[]>();
  for (const [name, p] of used) {
    const record = paramsRecord(p);
    const key = JSON.stringify(Object.fromEntries(CARD_COLUMNS.map((k) => [k, record[k]])));
    // Appended in place: a copy per tensor made a 300k-tensor card quadratic (minutes, deaf to signals).
    const names = groups.get(key);
    if (names) names.push(name);
    else groups.set(key, [name]);
  }
  const lines: string[] = [];
  if (groups.size > 1) {
    lines.push('', '## Parameters per tensor', '', `Agents in order: ${labels.join(', ')}.`, '');
    // An optional parameter gets a column only where some tensor has it (the other methods' tables stay as they were).
    const columns = CARD_COLUMNS.filter(
      (k) => !specOf(k).optional || [...used.values()].some((p) => paramsRecord(p)[k] !== undefined),
    );
    lines.push(
      `| ${columns.map((k) => specOf(k).card).join(' | ')} | tensors |`,
      `|${columns.map(() => '---|').join('')}---|`,
    );
    for (const [key, names] of groups) {
      const p = JSON.parse(key) as Record<string, number | number[] | undefined>;
      const shown =
        names.length > 3 ? `${names.slice(0, 3).join(', ')} … (${names.length})` : names.join(', ');
      const cell = (value: number | number[] | undefined): string =>
        Array.isArray(value) ? value.join(', ') : value === undefined ? '' : String(value);
      lines.push(`| ${columns.map((k) => cell(p[k])).join(' | ')} | ${shown} |`);
    }
  }
  return lines;
}

/** What the read precision did (SPEC.md "Inputs stored in other precisions"), or '' where nothing. */
function readPrecisionNote(readDtype: ReadDtype | undefined, rounded: number): string {
  const at =
    readDtype === undefined
      ? 'the base’s dtype'
      : readDtype === 'stored'
        ? 'stored precision'
        : dtypeToYaml(readDtype);
  if (readDtype === undefined && rounded === 0) return '';
  return ` Inputs read at ${at}${rounded > 0 ? ` (values rounded in ${rounded} tensor${rounded === 1 ? '' : 's'})` : ''}.`;
}

/** Agent t's λ over the tensors, "min–max" (one value where all are equal), 6 decimals. */
export function lambdaRange(tensorLambdas: ReadonlyMap<string, readonly number[]>, t: number): string {
  let min = Infinity;
  let max = -Infinity;
  for (const lambdas of tensorLambdas.values()) {
    const l = lambdas[t] ?? 1;
    min = Math.min(min, l);
    max = Math.max(max, l);
  }
  if (min > max) return 'none (no tensor merged)';
  return min === max ? min.toFixed(6) : `${min.toFixed(6)}–${max.toFixed(6)}`;
}

/** The card's table of each tensor's λ per agent (tensor-local RAM+). */
function tensorLambdaTable(tensorLambdas: ReadonlyMap<string, readonly number[]>, agents: number): string[] {
  const head = Array.from({ length: agents }, (_, t) => `λ agent ${t + 1}`);
  return [
    '## Per-tensor λ',
    '',
    'The λ each agent’s unique changes got in each tensor (tensor-local RAM+: ρ from that tensor’s counts).',
    '',
    `| tensor | ${head.join(' | ')} |`,
    `|---|${head.map(() => '---:').join('|')}|`,
    ...[...tensorLambdas].map(([name, l]) => `| \`${name}\` | ${l.map((x) => x.toFixed(6)).join(' | ')} |`),
    '',
  ];
}

export function modelCard(input: {
  job: MergeJob;
  inputFiles?: InputFile[];
  lambdas: number[];
  /** Each tensor's λ per agent, where λ is per tensor (`ramplus_tl`). */
  tensorLambdas?: Map<string, readonly number[]>;
  analysis?: AnalysisResult;
  outDtype?: FloatDtype;
  shards: WrittenFile[];
  merged: number;
  copied: number;
  used: Map<string, MethodParams>;
  /** Merged tensors whose values the read precision rounded in some model. */
  rounded?: number;
}): string {
  const { job, lambdas, analysis, outDtype, shards } = input;
  const p = job.params;
  const lines = [
    '---',
    'tags:',
    '- merge',
    `- ${TOOL_NAME}`,
    `- ${p.method}`,
    '---',
    `# Merged model (${p.method})`,
    '',
    `Made with ${TOOL_NAME} ${TOOL_VERSION} (${job.engine.description}).`,
    '',
    '## Inputs',
    '',
    `- base: \`${job.baseLabel}\``,
    ...job.agentLabels.map(
      (label, t) =>
        `- agent ${t + 1}: \`${label}\` (${
          input.tensorLambdas
            ? `λ per tensor ${lambdaRange(input.tensorLambdas, t)}: see “Per-tensor λ” below`
            : `λ = ${lambdas[t]?.toFixed(6)}`
        })`,
    ),
    '',
    '## Method and parameters',
    '',
    '```yaml',
    toMergekitYaml(recipeOf(job, outDtype)).trimEnd(),
    '```',
    '',
    `${input.merged} tensors merged, ${input.copied} copied from the base byte for byte.` +
      (outDtype ? ` Output dtype: ${dtypeToYaml(outDtype)}.` : '') +
      readPrecisionNote(job.readDtype, input.rounded ?? 0) +
      (job.engine.kind === 'gpu'
        ? ' Merged values are computed in float32.'
        : ' Merged values are computed in float64 (CPU reference).'),
  ];
  const notes = job.recipe?.notes ?? [];
  if (notes.length) lines.push('', ...notes.map((note) => `- ${note}`));
  const descriptor = methodOf(p.method);
  if (descriptor.plan.sparsify === 'dare')
    lines.push(
      '',
      `DARE rescale rule: ${p.rescale ?? 'density'} (${
        {
          density: 'kept entries × 1/density',
          l1: 'each agent’s L1 norm per tensor kept, as mergekit',
          none: 'no rescale',
        }[p.rescale ?? 'density']
      }); seed ${p.seed}.`,
    );
  if (descriptor.tieRule) lines.push('', `Tie rule: ${descriptor.tieRule}`);
  lines.push(...perTensorLines(input.used, job.agentLabels));
  if (input.tensorLambdas) lines.push('', ...tensorLambdaTable(input.tensorLambdas, job.agentLabels.length));
  if (analysis) {
    lines.push(
      '',
      '## Statistics (ε = ' + analysis.epsilon + ')',
      '',
      '| agent | changed | unique | shared | ρ |',
      '|---|---|---|---|---|',
    );
    const totals = analysis.totals;
    job.agentLabels.forEach((label, t) => {
      const rho = totals.rho[t]!;
      lines.push(
        `| ${label} | ${totals.changed[t]} | ${totals.unique[t]} | ${totals.shared[t]} | ${Number.isFinite(rho) ? rho.toFixed(4) : '∞'} |`,
      );
    });
  }
  if (input.inputFiles?.length) {
    lines.push('', '## Input files', '', '| model | file | bytes | sha256 |', '|---|---|---|---|');
    for (const f of input.inputFiles) lines.push(`| ${f.model} | ${f.file} | ${f.bytes} | ${f.sha256} |`);
  }
  lines.push('', '## Files', '', '| file | bytes | sha256 |', '|---|---|---|');
  for (const shard of shards) lines.push(`| ${shard.file} | ${shard.bytes} | ${shard.sha256} |`);
  return `${lines.join('\n')}\n`;
}

// The model card (README.md) and the files a merged Hugging Face folder carries beside its weights:
// the base's tokenizer and generation files copied as they are, text files written whole. The card's
// method notes (tie rules, DARE's rescale) come from the method registry.
import packageJson from '../../package.json' with { type: 'json' };
import type { FloatDtype } from '../format/dtype.ts';
import type { ReadDtype } from '../format/precision.ts';
import { comparedNames, defaultReadAs, recipeReadDtype } from './read-precision.ts';
import type { Model } from '../format/model.ts';
import type { ModelFile } from '../io/source.ts';
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

/** The largest companion file copied: tokenizers run to tens of MiB; anything larger is not one. */
export const MAX_COMPANION_BYTES = 64 * 1024 * 1024;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Why a companion file of the base is not what its name says, or null: a link out of the model folder
 * (it may reach anything, and the merged folder is what users upload), more than
 * MAX_COMPANION_BYTES, a .json that does not parse, a text file that is not UTF-8. A SentencePiece
 * `.model` is binary, so only its size is checked.
 */
export function companionProblem(file: ModelFile, bytes?: Uint8Array): string | null {
  if (file.link && !file.link.contained)
    return `is a symbolic link to ${file.link.target}, outside the model folder`;
  if (file.source.size > MAX_COMPANION_BYTES)
    return `is ${file.source.size} bytes, more than a ${file.name} can be (${MAX_COMPANION_BYTES} at most)`;
  if (!bytes || file.name.endsWith('.model')) return null;
  let text;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return 'is not UTF-8 text';
  }
  if (file.name.endsWith('.json')) {
    try {
      JSON.parse(text);
    } catch (error) {
      return `is not JSON (${(error as Error).message})`;
    }
  }
  return null;
}

/**
 * Copies one companion file of `model` into `out` where it is what its name says (companionProblem);
 * otherwise skips it and returns the warning, naming the file.
 */
export async function copyCompanion(
  out: FolderSink,
  model: Model,
  file: string,
  written: WrittenFile[],
): Promise<string | null> {
  const entry = model.files.find((f) => f.name === file);
  if (!entry) return null;
  const skipped = (why: string) => `${model.name}: ${file} ${why}; it was not copied into the merged folder.`;
  const early = companionProblem(entry);
  if (early) return skipped(early);
  const bytes = await entry.source.read(0, entry.source.size);
  const problem = companionProblem(entry, bytes);
  if (problem) return skipped(problem);
  const sink = await out.create(file);
  try {
    await sink.write(bytes);
    await sink.close();
  } catch (error) {
    await sink.abort();
    throw error;
  }
  written.push({ file, bytes: bytes.length });
  return null;
}

/** The recipe as mergekit_config.yml and the card show it: the job's own, or its labels and params. */
export function recipeOf(job: MergeJob, outDtype: FloatDtype | undefined): Recipe {
  // The dtype the recipe writes is the read precision this merge used: read back, it sets D again.
  const models = [job.base, ...job.agents];
  const mathDtype = recipeReadDtype(
    job.readDtype,
    defaultReadAs(models, comparedNames(job.base, job.agents)),
  );
  return job.recipe
    ? { ...job.recipe, outDtype, mathDtype }
    : { base: job.baseLabel, models: job.agentLabels, params: job.params, outDtype, mathDtype, labels: true };
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
    lines.push(
      '',
      '## Parameters per tensor',
      '',
      `Agents in order: ${labels.map(markdownText).join(', ')}.`,
      '',
    );
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
        names.length > 3
          ? `${names.slice(0, 3).map(markdownText).join(', ')} … (${names.length})`
          : names.map(markdownText).join(', ');
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

/**
 * Text as Markdown shows it literally, wherever in a line it stands: the characters that start code,
 * emphasis, links, HTML, entities, table cells or a heading's closing run are backslash-escaped (an
 * underscore only at a word's edge, where it can emphasise), and line breaks and other control
 * characters become spaces, so a folder or model name cannot start a heading, split a table row or
 * inject HTML into the card. Shard and tensor names (dots, dashes, inner underscores) stay as they are.
 */
export function markdownText(text: string): string {
  return text
    .replace(/\p{Cc}+/gu, ' ')
    .replace(/[\\`*[\]<>|~&#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])/g, '\\$&');
}

/** The inverse of markdownText for one line of it (names read back from a card's heading). */
export function unescapeMarkdown(text: string): string {
  return text.replace(/\\([\\`*[\]<>|~&#_])/g, '$1');
}

/** A code span showing `text` literally (outside tables): a fence longer than any backtick run inside. */
export function markdownCode(text: string): string {
  const clean = text.replace(/\p{Cc}+/gu, ' ');
  const longest = Math.max(0, ...(clean.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  // A space each side where the text starts or ends with a backtick (CommonMark strips one each side).
  const pad = clean.startsWith('`') || clean.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${clean}${pad}${fence}`;
}

/** A YAML double-quoted scalar (JSON strings are valid YAML), so any name is one safe value. */
export function yamlString(text: string): string {
  return JSON.stringify(text);
}

/** The card's title for a merge without a name (the CLI's): the library shows the folder instead. */
const DEFAULT_TITLE = /^Merged model \(/;

/** The merge's name from a card's title (its first `# ` heading), or null where it has none. */
export function cardName(card: string): string | null {
  const title = /^# (.*)$/m.exec(card)?.[1];
  if (title === undefined || DEFAULT_TITLE.test(title)) return null;
  return unescapeMarkdown(title);
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
    ...[...tensorLambdas].map(
      ([name, l]) => `| ${markdownText(name)} | ${l.map((x) => x.toFixed(6)).join(' | ')} |`,
    ),
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
  const yaml = toMergekitYaml(recipeOf(job, outDtype)).trimEnd();
  // A fence longer than any backtick run in the recipe, which holds the models' names.
  const fence = '`'.repeat(Math.max(3, ...(yaml.match(/`+/g) ?? []).map((run) => run.length + 1)));
  const lines = [
    '---',
    // The Hub reads base_model (its model tree) and library_name (how to load it) from here.
    `base_model: ${yamlString(job.recipe?.base || job.baseLabel)}`,
    'library_name: transformers',
    'tags:',
    '- merge',
    `- ${TOOL_NAME}`,
    `- ${p.method}`,
    '---',
    job.name ? `# ${markdownText(job.name)}` : `# Merged model (${p.method})`,
    '',
    `Made with ${TOOL_NAME} ${TOOL_VERSION} (${job.engine.description})${job.name ? `, method ${p.method}` : ''}.`,
    '',
    '## Inputs',
    '',
    `- base: ${markdownCode(job.baseLabel)}`,
    ...job.agentLabels.map(
      (label, t) =>
        `- agent ${t + 1}: ${markdownCode(label)} (${
          input.tensorLambdas
            ? `λ per tensor ${lambdaRange(input.tensorLambdas, t)}: see “Per-tensor λ” below`
            : `λ = ${lambdas[t]?.toFixed(6)}`
        })`,
    ),
    '',
    '## Method and parameters',
    '',
    `${fence}yaml`,
    yaml,
    fence,
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
        `| ${markdownText(label)} | ${totals.changed[t]} | ${totals.unique[t]} | ${totals.shared[t]} | ${Number.isFinite(rho) ? rho.toFixed(4) : '∞'} |`,
      );
    });
  }
  if (input.inputFiles?.length) {
    lines.push('', '## Input files', '', '| model | file | bytes | sha256 |', '|---|---|---|---|');
    for (const f of input.inputFiles)
      lines.push(`| ${markdownText(f.model)} | ${markdownText(f.file)} | ${f.bytes} | ${f.sha256} |`);
  }
  lines.push('', '## Files', '', '| file | bytes | sha256 |', '|---|---|---|');
  for (const shard of shards)
    lines.push(`| ${markdownText(shard.file)} | ${shard.bytes} | ${shard.sha256} |`);
  return `${lines.join('\n')}\n`;
}

// Decides from headers and configs alone whether a base and its agents can be merged, listing every
// per-tensor difference (not just the first) and naming the classic causes.

import { isMergeableDtype } from './dtype.ts';
import type { Model, ModelTensor } from './model.ts';
import { compareNames } from './write.ts';

export interface CompatIssue {
  tensor: string;
  kind: 'missing' | 'extra' | 'shape' | 'dtype';
  /** The agent the difference was found in. */
  model: string;
  detail: string;
}

export interface CompatReport {
  /** No issues, and at least one tensor to merge. */
  ok: boolean;
  /**
   * Tensors in every model with the same shape and dtype, sorted; BF16, F16 and F32 count as one
   * (SPEC.md "Inputs stored in other precisions": they are read at one precision).
   */
  common: string[];
  issues: CompatIssue[];
  notes: string[];
}

export const ISSUE_KINDS: readonly CompatIssue['kind'][] = ['missing', 'extra', 'shape', 'dtype'];

/**
 * A report's issues in columns, built without an object or a text per issue: a 300,000-tensor agent
 * beside a small base has 300,000 "extra" tensors, and the engine worker sends them to the page as
 * a few strings and typed arrays. `issueAt` gives issue i as the report lists it.
 */
export interface IssueColumns {
  count: number;
  /** Every issue's tensor name concatenated: issue i's is `tensors.slice(tensorEnds[i - 1] ?? 0, tensorEnds[i])`. */
  tensors: string;
  tensorEnds: Uint32Array;
  /** Index into ISSUE_KINDS. */
  kinds: Uint8Array;
  /** Index into `models`. */
  modelIndex: Uint32Array;
  models: string[];
  /** The base's name: with the agent's, the whole detail of a missing or an extra tensor. */
  base: string;
  /** The shape and dtype issues' details in issue order; issue i's is `details[detailIndex[i]]`, -1 for the others. */
  details: string[];
  detailIndex: Int32Array;
}

/** The report with its issues in columns. */
export interface CompatColumns extends Omit<CompatReport, 'issues'> {
  issues: IssueColumns;
}

const EMBEDDING = /(?:^|\.)(?:embed_tokens|wte|word_embeddings|tok_embeddings|embed_in|shared)\.weight$/;
const LM_HEAD = /(?:^|\.)(?:lm_head|embed_out)\.weight$/;

export function checkCompatibility(base: Model, agents: Model[]): CompatReport {
  const { issues, ...report } = compatColumns(base, agents);
  return { ...report, issues: Array.from({ length: issues.count }, (_, i) => issueAt(issues, i)) };
}

/** checkCompatibility with the issues in columns: the same issues in the same order. */
export function compatColumns(base: Model, agents: Model[]): CompatColumns {
  // At most a shape and a dtype issue per base tensor, or one missing, and every agent tensor extra.
  const issues = new IssueBuilder(
    agents.reduce((n, agent) => n + 2 * base.tensors.size + agent.tensors.size, 0),
  );
  const notes: string[] = [];
  const shared = new Set(base.tensors.keys());
  agents.forEach((agent, a) => {
    const widths = new Map<string, number>();
    for (const [name, tensor] of base.tensors) {
      const other = agent.tensors.get(name);
      if (!other) {
        issues.add(name, MISSING, a);
        shared.delete(name);
        continue;
      }
      if (!sameShape(tensor.shape, other.shape)) {
        issues.add(
          name,
          SHAPE,
          a,
          `${base.name} has shape ${shapeText(tensor.shape)}, ${agent.name} ${shapeText(other.shape)}`,
        );
        shared.delete(name);
        const vocab = vocabNote(base, agent, tensor, other);
        if (vocab) notes.push(vocab);
      }
      if (tensor.dtype === other.dtype) continue;
      if (isMergeableDtype(tensor.dtype) && isMergeableDtype(other.dtype)) {
        const pair = `${other.dtype} where ${base.name} stores ${tensor.dtype}`;
        widths.set(pair, (widths.get(pair) ?? 0) + 1);
        continue;
      }
      issues.add(name, DTYPE, a, `${base.name} stores ${tensor.dtype}, ${agent.name} ${other.dtype}`);
      shared.delete(name);
    }
    for (const name of agent.tensors.keys()) if (!base.tensors.has(name)) issues.add(name, EXTRA, a);
    for (const [pair, count] of widths)
      notes.push(
        `${agent.name} stores ${count} tensor${count === 1 ? '' : 's'} in ${pair}: ` +
          'they are compared at the base’s precision unless a read precision is chosen.',
      );
    notes.push(...configNotes(base, agent));
  });
  notes.push(...tiedEmbeddingNotes([base, ...agents]));
  const common = [...shared].sort(compareNames);
  if (common.length === 0)
    notes.push('the models have no tensor in common with the same shape and dtype: nothing to merge.');
  return {
    ok: issues.count === 0 && common.length > 0,
    common,
    // By position, not by name: two agents may carry the same name.
    issues: issues.columns(
      base.name,
      agents.map((agent) => agent.name),
    ),
    notes: [...new Set(notes)],
  };
}

const MISSING = ISSUE_KINDS.indexOf('missing');
const EXTRA = ISSUE_KINDS.indexOf('extra');
const SHAPE = ISSUE_KINDS.indexOf('shape');
const DTYPE = ISSUE_KINDS.indexOf('dtype');

/** The issue columns, filled in typed arrays of the most issues the models can have. */
class IssueBuilder {
  count = 0;
  private readonly names: string[] = [];
  private readonly tensorEnds: Uint32Array;
  private readonly kinds: Uint8Array;
  private readonly modelIndex: Uint32Array;
  private readonly details: string[] = [];
  private readonly detailIndex: Int32Array;
  private end = 0;

  constructor(capacity: number) {
    this.tensorEnds = new Uint32Array(capacity);
    this.kinds = new Uint8Array(capacity);
    this.modelIndex = new Uint32Array(capacity);
    this.detailIndex = new Int32Array(capacity);
  }

  add(tensor: string, kind: number, agent: number, detail?: string): void {
    const i = this.count++;
    this.names.push(tensor);
    this.end += tensor.length;
    this.tensorEnds[i] = this.end;
    this.kinds[i] = kind;
    this.modelIndex[i] = agent;
    this.detailIndex[i] = detail === undefined ? -1 : this.details.push(detail) - 1;
  }

  columns(base: string, models: string[]): IssueColumns {
    const { count } = this;
    return {
      count,
      tensors: this.names.join(''),
      tensorEnds: this.tensorEnds.slice(0, count),
      kinds: this.kinds.slice(0, count),
      modelIndex: this.modelIndex.slice(0, count),
      models,
      base,
      details: this.details,
      detailIndex: this.detailIndex.slice(0, count),
    };
  }
}

/** Issue i as the report lists it. */
export function issueAt(issues: IssueColumns, i: number): CompatIssue {
  const kind = ISSUE_KINDS[issues.kinds[i] ?? 0] ?? 'missing';
  const model = issues.models[issues.modelIndex[i] ?? 0] ?? '';
  const own = issues.details[issues.detailIndex[i] ?? -1];
  const detail =
    own ??
    (kind === 'missing' ? `in ${issues.base} but not in ${model}` : `in ${model} but not in ${issues.base}`);
  const tensor = issues.tensors.slice(i > 0 ? (issues.tensorEnds[i - 1] ?? 0) : 0, issues.tensorEnds[i]);
  return { tensor, kind, model, detail };
}

function sameShape(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((dim, i) => dim === b[i]);
}

function shapeText(shape: number[]): string {
  return `[${shape.join(', ')}]`;
}

/** An embedding or output layer whose first dimension alone differs is a vocabulary-size mismatch. */
function vocabNote(base: Model, agent: Model, a: ModelTensor, b: ModelTensor): string | undefined {
  if (!EMBEDDING.test(a.name) && !LM_HEAD.test(a.name)) return undefined;
  if (
    a.shape.length !== b.shape.length ||
    a.shape.length === 0 ||
    !a.shape.slice(1).every((d, i) => d === b.shape[i + 1])
  ) {
    return undefined;
  }
  return `vocabulary size differs in ${a.name}: ${base.name} has ${a.shape[0]} rows, ${agent.name} ${b.shape[0]} (tokens were added to one of them); resize the embeddings to match or merge without ${a.name}.`;
}

function configNumber(model: Model, keys: string[]): number | undefined {
  for (const key of keys) {
    const value = model.config?.[key];
    if (typeof value === 'number') return value;
  }
  return undefined;
}

function configNotes(base: Model, agent: Model): string[] {
  const notes: string[] = [];
  const facts: [string, string[]][] = [
    ['vocab_size', ['vocab_size']],
    ['hidden_size', ['hidden_size', 'n_embd', 'd_model']],
    ['num_hidden_layers', ['num_hidden_layers', 'n_layer', 'num_layers']],
  ];
  for (const [label, keys] of facts) {
    const a = configNumber(base, keys);
    const b = configNumber(agent, keys);
    if (a !== undefined && b !== undefined && a !== b) {
      notes.push(`config.json ${label} differs: ${base.name} ${a}, ${agent.name} ${b}.`);
    }
  }
  const typeA = base.config?.model_type;
  const typeB = agent.config?.model_type;
  if (typeof typeA === 'string' && typeof typeB === 'string' && typeA !== typeB) {
    notes.push(
      `config.json model_type differs: ${base.name} is ${typeA}, ${agent.name} ${typeB}: these are different architectures.`,
    );
  }
  return notes;
}

/**
 * Whether the model has an output layer and input embeddings, in one pass over its names (both
 * patterns end in `.weight`, a cheap test that skips the regexes for most names).
 */
function headAndEmbedding(model: Model): [boolean, boolean] {
  let head = false;
  let embedding = false;
  for (const name of model.tensors.keys()) {
    if (!name.endsWith('.weight')) continue;
    head ||= LM_HEAD.test(name);
    embedding ||= EMBEDDING.test(name);
    if (head && embedding) break;
  }
  return [head, embedding];
}

/** A model with input embeddings but no lm_head ties its output layer to the embeddings. */
function tiedEmbeddingNotes(models: Model[]): string[] {
  const notes: string[] = [];
  const found = models.map(headAndEmbedding);
  const hasHead = found.map(([head]) => head);
  const hasEmbedding = found.map(([, embedding]) => embedding);
  models.forEach((model, i) => {
    if (hasEmbedding[i] && !hasHead[i]) {
      notes.push(
        `${model.name} has no lm_head: its embeddings are tied (the output layer reuses the input embeddings).`,
      );
    }
  });
  if (hasHead.some(Boolean) && !hasHead.every(Boolean)) {
    const without = models.filter((_, i) => !hasHead[i]).map((m) => m.name);
    notes.push(
      `lm_head is present in some models but not in ${without.join(', ')}: tied and untied embeddings are being mixed; check tie_word_embeddings in each config.json.`,
    );
  }
  return notes;
}

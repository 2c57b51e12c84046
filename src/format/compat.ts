// Decides from headers and configs alone whether a base and its agents can be merged, listing every
// per-tensor difference (not just the first) and naming the classic causes.

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
  /** Tensors in every model with the same shape and dtype, sorted. */
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
  const names: string[] = [];
  const kinds: number[] = [];
  const modelIndex: number[] = [];
  const details: string[] = [];
  const detailIndex: number[] = [];
  const notes: string[] = [];
  const shared = new Set(base.tensors.keys());
  const add = (tensor: string, kind: CompatIssue['kind'], agent: number, detail?: string): void => {
    names.push(tensor);
    kinds.push(ISSUE_KINDS.indexOf(kind));
    modelIndex.push(agent);
    detailIndex.push(detail === undefined ? -1 : details.push(detail) - 1);
  };
  agents.forEach((agent, a) => {
    for (const [name, tensor] of base.tensors) {
      const other = agent.tensors.get(name);
      if (!other) {
        add(name, 'missing', a);
        shared.delete(name);
        continue;
      }
      if (!sameShape(tensor.shape, other.shape)) {
        add(
          name,
          'shape',
          a,
          `${base.name} has shape ${shapeText(tensor.shape)}, ${agent.name} ${shapeText(other.shape)}`,
        );
        shared.delete(name);
        const vocab = vocabNote(base, agent, tensor, other);
        if (vocab) notes.push(vocab);
      }
      if (tensor.dtype !== other.dtype) {
        add(name, 'dtype', a, `${base.name} stores ${tensor.dtype}, ${agent.name} ${other.dtype}`);
        shared.delete(name);
      }
    }
    for (const name of agent.tensors.keys()) if (!base.tensors.has(name)) add(name, 'extra', a);
    notes.push(...configNotes(base, agent));
  });
  notes.push(...tiedEmbeddingNotes([base, ...agents]));
  const common = [...shared].sort(compareNames);
  if (common.length === 0)
    notes.push('the models have no tensor in common with the same shape and dtype: nothing to merge.');
  const tensorEnds = new Uint32Array(names.length);
  let end = 0;
  names.forEach((name, i) => (tensorEnds[i] = end += name.length));
  return {
    ok: names.length === 0 && common.length > 0,
    common,
    issues: {
      count: names.length,
      tensors: names.join(''),
      tensorEnds,
      kinds: Uint8Array.from(kinds),
      modelIndex: Uint32Array.from(modelIndex),
      // By position, not by name: two agents may carry the same name.
      models: agents.map((agent) => agent.name),
      base: base.name,
      details,
      detailIndex: Int32Array.from(detailIndex),
    },
    notes: [...new Set(notes)],
  };
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

/** Whether a tensor name matches, without copying 300,000 names into an array first. */
function someName(model: Model, pattern: RegExp): boolean {
  for (const name of model.tensors.keys()) if (pattern.test(name)) return true;
  return false;
}

/** A model with input embeddings but no lm_head ties its output layer to the embeddings. */
function tiedEmbeddingNotes(models: Model[]): string[] {
  const notes: string[] = [];
  const hasHead = models.map((m) => someName(m, LM_HEAD));
  const hasEmbedding = models.map((m) => someName(m, EMBEDDING));
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

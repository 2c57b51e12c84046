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

const EMBEDDING = /(?:^|\.)(?:embed_tokens|wte|word_embeddings|tok_embeddings|embed_in|shared)\.weight$/;
const LM_HEAD = /(?:^|\.)(?:lm_head|embed_out)\.weight$/;

export function checkCompatibility(base: Model, agents: Model[]): CompatReport {
  const issues: CompatIssue[] = [];
  const notes: string[] = [];
  const shared = new Set(base.tensors.keys());
  for (const agent of agents) {
    for (const [name, tensor] of base.tensors) {
      const other = agent.tensors.get(name);
      if (!other) {
        issues.push({
          tensor: name,
          kind: 'missing',
          model: agent.name,
          detail: `in ${base.name} but not in ${agent.name}`,
        });
        shared.delete(name);
        continue;
      }
      if (!sameShape(tensor.shape, other.shape)) {
        issues.push({
          tensor: name,
          kind: 'shape',
          model: agent.name,
          detail: `${base.name} has shape ${shapeText(tensor.shape)}, ${agent.name} ${shapeText(other.shape)}`,
        });
        shared.delete(name);
        const vocab = vocabNote(base, agent, tensor, other);
        if (vocab) notes.push(vocab);
      }
      if (tensor.dtype !== other.dtype) {
        issues.push({
          tensor: name,
          kind: 'dtype',
          model: agent.name,
          detail: `${base.name} stores ${tensor.dtype}, ${agent.name} ${other.dtype}`,
        });
        shared.delete(name);
      }
    }
    for (const name of agent.tensors.keys()) {
      if (!base.tensors.has(name)) {
        issues.push({
          tensor: name,
          kind: 'extra',
          model: agent.name,
          detail: `in ${agent.name} but not in ${base.name}`,
        });
      }
    }
    notes.push(...configNotes(base, agent));
  }
  notes.push(...tiedEmbeddingNotes([base, ...agents]));
  const common = [...shared].sort(compareNames);
  if (common.length === 0)
    notes.push('the models have no tensor in common with the same shape and dtype: nothing to merge.');
  return { ok: issues.length === 0 && common.length > 0, common, issues, notes: [...new Set(notes)] };
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

/** A model with input embeddings but no lm_head ties its output layer to the embeddings. */
function tiedEmbeddingNotes(models: Model[]): string[] {
  const notes: string[] = [];
  const hasHead = models.map((m) => [...m.tensors.keys()].some((name) => LM_HEAD.test(name)));
  const hasEmbedding = models.map((m) => [...m.tensors.keys()].some((name) => EMBEDDING.test(name)));
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

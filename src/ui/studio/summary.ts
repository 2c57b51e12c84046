// Views of the statistics pass for the charts: tensors grouped into layers and module types (integer
// counts summed first, so the groups add up to the model), pairwise overlaps (counted, or derived
// where the counts determine them), sign conflict rates, the |τ| magnitude histogram, the tensor
// table's filter and what a RAM-family merge does with the elements.
import type { TensorStats } from '../../engine/types.ts';
import { dtypeBits, type FloatDtype } from '../../format/dtype.ts';
import { MAGNITUDE_BINS, magnitudeBin, sumStats, type ModelStats } from '../../methods/stats.ts';

const NUMBERED = /(?:^|\.)(layers|layer|h|blocks|block)\.(\d+)\./;

/** `model.layers.3.mlp.up_proj.weight` → `layers.3`; an unnumbered tensor groups by its module (`head`). */
export function layerOf(name: string): string {
  const numbered = NUMBERED.exec(name);
  if (numbered) return `${numbered[1]}.${numbered[2]}`;
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : name;
}

const collator = new Intl.Collator('en', { numeric: true });

export interface LayerStats {
  layer: string;
  tensors: number;
  stats: ModelStats;
}

/** Per-layer totals, in natural name order (layers.2 before layers.10). */
export function layerStats(tensors: readonly TensorStats[], agents: number): LayerStats[] {
  const groups = new Map<string, TensorStats[]>();
  for (const t of tensors) {
    const key = layerOf(t.name);
    const group = groups.get(key);
    if (group) group.push(t);
    else groups.set(key, [t]);
  }
  return [...groups.keys()].sort(collator.compare).map((layer) => {
    const members = groups.get(layer) ?? [];
    return { layer, tensors: members.length, stats: sumStats(members, agents) };
  });
}

/** Elements changed by two or more agents. */
export function sharedElements(stats: Pick<ModelStats, 'counts'>): number {
  return stats.counts.slice(2).reduce((a, b) => a + b, 0);
}

/** Share of shared elements whose contributors disagree in sign; 0 when nothing is shared. */
export function signConflictRate(stats: Pick<ModelStats, 'counts' | 'signConflicts'>): number {
  const shared = sharedElements(stats);
  return shared === 0 ? 0 : stats.signConflicts / shared;
}

/**
 * |changed by a ∩ changed by b| for every pair, or null: the counted pairs when the statistics have
 * them (N ≤ 8), else derived from the per-agent "exactly k others" counts, which fix the pairs only
 * for N ≤ 3 (N = 3: each agent's k = 1 count is the sum of its two exactly-two pairs).
 */
export function pairwiseOverlap(
  stats: Pick<ModelStats, 'agents' | 'overlap' | 'counts' | 'changed' | 'pairs'>,
): number[][] | null {
  const n = stats.agents;
  if (n < 2) return null;
  if (stats.pairs) return stats.pairs.map((row) => [...row]);
  if (n > 3) return null;
  const matrix = Array.from({ length: n }, (_, a) =>
    Array.from({ length: n }, (_, b) => (a === b ? (stats.changed[a] ?? 0) : 0)),
  );
  if (n === 2) {
    const both = stats.counts[2] ?? 0;
    matrix[0]![1] = both;
    matrix[1]![0] = both;
    return matrix;
  }
  const all = stats.counts[3] ?? 0;
  const one = (t: number): number => stats.overlap[t]?.[1] ?? 0;
  for (let a = 0; a < 3; a++)
    for (let b = a + 1; b < 3; b++) {
      const c = 3 - a - b;
      const exactlyTwo = (one(a) + one(b) - one(c)) / 2;
      matrix[a]![b] = exactlyTwo + all;
      matrix[b]![a] = exactlyTwo + all;
    }
  return matrix;
}

/** Label of a magnitude bin, e.g. "2^-7"; the end bins say "<" and "≥". */
export function binLabel(index: number): string {
  const bin = MAGNITUDE_BINS[index];
  if (!bin) return '';
  if (index === 0) return `<2^${bin.exponent + 1}`;
  if (index === MAGNITUDE_BINS.length - 1) return `≥2^${bin.exponent}`;
  return `2^${bin.exponent}`;
}

/** The magnitude bin that holds ε, where the changed/unchanged threshold falls. */
export function epsilonBin(epsilon: number): number {
  return magnitudeBin(epsilon);
}

/** The bins from the first to the last non-empty one over all agents (plus ε's bin). */
export function magnitudeRange(stats: Pick<ModelStats, 'magnitude'>, epsilon: number): [number, number] {
  let low = epsilonBin(epsilon);
  let high = low;
  for (const row of stats.magnitude)
    row.forEach((count, bin) => {
      if (count > 0) {
        low = Math.min(low, bin);
        high = Math.max(high, bin);
      }
    });
  return [low, high];
}

/** The share of an agent's changes at most one ulp of the base above which a plain re-save is likely. */
export const RESAVE_SHARE = 0.95;

/** Per agent: nearly every change is one ulp, the fingerprint of a dtype round trip, not training. */
export function resaveSuspects(stats: Pick<ModelStats, 'changed' | 'oneUlp'>): boolean[] {
  return stats.changed.map((changed, t) => changed > 0 && (stats.oneUlp[t] ?? 0) / changed >= RESAVE_SHARE);
}

/** `part / whole` as a percentage with `digits` decimals; "0" for an empty whole. */
export function percent(part: number, whole: number, digits = 1): string {
  return whole === 0 ? '0' : ((100 * part) / whole).toFixed(digits);
}

export const MODULE_TYPES = ['attention', 'mlp', 'embedding', 'norm', 'head', 'other'] as const;
export type ModuleType = (typeof MODULE_TYPES)[number];

const ATTENTION = /^(?:q_proj|k_proj|v_proj|o_proj|c_attn)$/;
const MLP = /^(?:gate_proj|up_proj|down_proj|fc1|fc2|c_fc)$/;
const EMBEDDING = /^(?:embed_tokens|wte|wpe|task_embed)$|embed/;
const NORM = /norm|^ln_/;
const HEAD = /^(?:lm_head|head)$/;
// Containers: a tensor directly in `attn` (GPT-2's attn.bias) or `mlp` belongs to that block.
const ATTENTION_BLOCK = /^(?:self_attn|attn|attention)$/;
const MLP_BLOCK = /^(?:mlp|ffn|feed_forward)$/;

/** The module type of one name segment, given the segment before it (GPT-2's c_proj is in both). */
function segmentModule(segment: string, parent: string | undefined): ModuleType | null {
  if (NORM.test(segment)) return 'norm';
  if (HEAD.test(segment)) return 'head';
  if (EMBEDDING.test(segment)) return 'embedding';
  if (ATTENTION.test(segment)) return 'attention';
  if (MLP.test(segment)) return 'mlp';
  if (segment === 'c_proj') return parent !== undefined && /attn/.test(parent) ? 'attention' : 'mlp';
  if (ATTENTION_BLOCK.test(segment)) return 'attention';
  if (MLP_BLOCK.test(segment)) return 'mlp';
  return null;
}

/**
 * `model.layers.0.self_attn.q_proj.weight` → attention. The innermost segment that names a module
 * decides, so a `q_norm` inside attention is a norm.
 */
export function moduleOf(name: string): ModuleType {
  const segments = name.split('.');
  for (let i = segments.length - 1; i >= 0; i--) {
    const found = segmentModule(segments[i]!, segments[i - 1]);
    if (found) return found;
  }
  return 'other';
}

export interface ModuleStats {
  module: ModuleType;
  tensors: number;
  stats: ModelStats;
}

/** Per-module-type totals in MODULE_TYPES order, only the types present. */
export function moduleStats(tensors: readonly TensorStats[], agents: number): ModuleStats[] {
  return MODULE_TYPES.flatMap((module) => {
    const members = tensors.filter((t) => moduleOf(t.name) === module);
    return members.length === 0
      ? []
      : [{ module, tensors: members.length, stats: sumStats(members, agents) }];
  });
}

export interface TensorFilter {
  /** Case-insensitive name substring; empty matches every name. */
  text: string;
  /** A layerOf() key, or null for every layer. */
  layer: string | null;
  module: ModuleType | null;
}

export const NO_FILTER: TensorFilter = { text: '', layer: null, module: null };

export function isFiltered(filter: TensorFilter): boolean {
  return filter.text.trim() !== '' || filter.layer !== null || filter.module !== null;
}

/** The tensors the table shows under a filter, in their original order. */
export function filterTensors<T extends { name: string }>(tensors: readonly T[], filter: TensorFilter): T[] {
  const text = filter.text.trim().toLowerCase();
  return tensors.filter(
    (t) =>
      (text === '' || t.name.toLowerCase().includes(text)) &&
      (filter.layer === null || layerOf(t.name) === filter.layer) &&
      (filter.module === null || moduleOf(t.name) === filter.module),
  );
}

export interface BranchCounts {
  /** c = 0: the base value is kept. */
  unchanged: number;
  /** c = 1: θ₀ + λ_t·τ_t of the one agent that changed it. */
  unique: number;
  /** c ≥ 2: θ₀ + the mean of the contributing agents' τ. */
  shared: number;
}

/** Where a RAM-family merge sends each element, from the statistics' exact counts. */
export function branchCounts(stats: Pick<ModelStats, 'counts'>): BranchCounts {
  return { unchanged: stats.counts[0] ?? 0, unique: stats.counts[1] ?? 0, shared: sharedElements(stats) };
}

/**
 * Tensor bytes of the merged model (headers excluded): the merged tensors in the output dtype (null
 * keeps each one's), every other base tensor copied as it is.
 */
export function expectedOutputBytes(
  merged: readonly { name: string; numel: number; dtype: FloatDtype }[],
  baseTensors: readonly { name: string; bytes: number }[],
  outDtype: FloatDtype | null,
): number {
  const names = new Set(merged.map((t) => t.name));
  const mergedBytes = merged.reduce((sum, t) => sum + (t.numel * dtypeBits(outDtype ?? t.dtype)) / 8, 0);
  const copied = baseTensors.filter((t) => !names.has(t.name)).reduce((sum, t) => sum + t.bytes, 0);
  return mergedBytes + copied;
}

// Views of the statistics pass for the charts: tensors grouped into layers and module types (integer
// counts summed first, so the groups add up to the model), pairwise overlaps (counted, or derived
// where the counts determine them), sign conflict rates, the |τ| magnitude histogram, the tensor
// table's filter and what a RAM-family merge does with the elements.
import type { TensorStats } from '../../methods/tensors.ts';
import { dtypeBits, type FloatDtype } from '../../format/dtype.ts';
import { MAGNITUDE_BINS, magnitudeBin, sumStats, type ModelStats } from '../../methods/stats.ts';
import {
  compareModules,
  comparePlaces,
  parseTensorName,
  rowLabel,
  type TensorPlace,
} from '../../format/names.ts';

/**
 * `model.layers.3.mlp.up_proj.weight` → `layers.3`; a tensor outside the numbered layers groups by
 * its module path (`lm_head`, `model.embed_tokens`), so a group's tensors share its name as prefix.
 */
export function layerOf(name: string): string {
  const place = parseTensorName(name);
  if (place.block === 'layer') return rowLabel(place);
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : name;
}

/** The stacks of numbered layers in order of first appearance (decoder after encoder, as stored). */
function stacksOf(places: readonly TensorPlace[]): string[] {
  return [...new Set(places.filter((p) => p.block === 'layer').map((p) => p.stack))];
}

const collator = new Intl.Collator('en', { numeric: true });

/** Group keys (layerOf) in model order: embeddings, layers 0..L−1, final norm, head, the rest by name. */
export function orderLayers(tensors: readonly { name: string }[]): string[] {
  const first = new Map<string, TensorPlace>();
  for (const t of tensors) {
    const key = layerOf(t.name);
    if (!first.has(key)) first.set(key, parseTensorName(t.name));
  }
  const stacks = stacksOf([...first.values()]);
  return [...first]
    .sort(([a, placeA], [b, placeB]) => comparePlaces(placeA, placeB, stacks) || collator.compare(a, b))
    .map(([layer]) => layer);
}

export interface LayerStats {
  layer: string;
  tensors: number;
  stats: ModelStats;
}

/** Per-layer totals, in model order (embeddings first, layers.2 before layers.10, head last). */
export function layerStats(tensors: readonly TensorStats[], agents: number): LayerStats[] {
  const groups = new Map<string, TensorStats[]>();
  for (const t of tensors) {
    const key = layerOf(t.name);
    const group = groups.get(key);
    if (group) group.push(t);
    else groups.set(key, [t]);
  }
  return orderLayers(tensors).map((layer) => {
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
  const all = stats.counts[3] ?? 0;
  const one = (t: number): number => stats.overlap[t]?.[1] ?? 0;
  // Two agents: the pair is everything both changed. Three: the elements exactly a and b changed
  // (by inclusion–exclusion over the third, c) plus those all three changed.
  const pair = (a: number, b: number): number =>
    n === 2 ? (stats.counts[2] ?? 0) : (one(a) + one(b) - one(3 - a - b)) / 2 + all;
  return Array.from({ length: n }, (_, a) =>
    Array.from({ length: n }, (_, b) => (a === b ? (stats.changed[a] ?? 0) : pair(a, b))),
  );
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

const FAMILY: Record<string, ModuleType> = {
  embed: 'embedding',
  pos_embed: 'embedding',
  head: 'head',
  q: 'attention',
  k: 'attention',
  v: 'attention',
  qkv: 'attention',
  o: 'attention',
  attn: 'attention',
  router: 'mlp',
  gate: 'mlp',
  up: 'mlp',
  gate_up: 'mlp',
  down: 'mlp',
};

/** The coarse type of a structure module (`q` → attention, `experts.up` → mlp); unknown paths are other. */
export function moduleFamily(module: string): ModuleType {
  if (/norm/.test(module)) return 'norm';
  const own = module.startsWith('experts.') || module.startsWith('shared.') ? 'up' : module;
  return FAMILY[own] ?? 'other';
}

/** `model.layers.0.self_attn.q_proj.weight` → attention: the family of its parsed module (names.ts). */
export function moduleOf(name: string): ModuleType {
  return moduleFamily(parseTensorName(name).module);
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
  /** Exactly these tensors (an atlas cell's), or null for any. */
  names: readonly string[] | null;
}

export const NO_FILTER: TensorFilter = { text: '', layer: null, module: null, names: null };

export function isFiltered(filter: TensorFilter): boolean {
  return (
    filter.text.trim() !== '' || filter.layer !== null || filter.module !== null || filter.names !== null
  );
}

/** The tensors the table shows under a filter, in their original order. */
export function filterTensors<T extends { name: string }>(tensors: readonly T[], filter: TensorFilter): T[] {
  const text = filter.text.trim().toLowerCase();
  return tensors.filter(
    (t) =>
      (text === '' || t.name.toLowerCase().includes(text)) &&
      (filter.layer === null || layerOf(t.name) === filter.layer) &&
      (filter.module === null || moduleOf(t.name) === filter.module) &&
      (filter.names === null || filter.names.includes(t.name)),
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

export interface AtlasCell {
  /** The row: a layerOf() group. */
  row: string;
  /** The column: the tensors' structure module (names.ts). */
  module: string;
  /** The tensors the cell sums, in the statistics' order. */
  tensors: string[];
  stats: ModelStats;
}

export interface Atlas {
  rows: string[];
  modules: string[];
  /** Cells by `atlasKey(row, module)`; a row × module pair with no tensor has none. */
  cells: Map<string, AtlasCell>;
}

export const atlasKey = (row: string, module: string): string => `${row}\u0000${module}`;

/** The layer × module grid: every tensor in exactly one cell, integer counts summed per cell. */
export function atlasOf(tensors: readonly TensorStats[], agents: number): Atlas {
  const groups = new Map<string, { row: string; module: string; members: TensorStats[] }>();
  const seen: string[] = [];
  for (const t of tensors) {
    const row = layerOf(t.name);
    const module = parseTensorName(t.name).module;
    if (!seen.includes(module)) seen.push(module);
    const key = atlasKey(row, module);
    const group = groups.get(key);
    if (group) group.members.push(t);
    else groups.set(key, { row, module, members: [t] });
  }
  const cells = new Map<string, AtlasCell>();
  for (const [key, { row, module, members }] of groups)
    cells.set(key, { row, module, tensors: members.map((m) => m.name), stats: sumStats(members, agents) });
  return {
    rows: orderLayers(tensors),
    modules: [...seen].sort((a, b) => compareModules(a, b, seen)),
    cells,
  };
}

export const ATLAS_METRICS = ['changed', 'unique', 'sharedWith', 'conflicts'] as const;
export type AtlasMetric = (typeof ATLAS_METRICS)[number];

export interface Ratio {
  part: number;
  whole: number;
}

/**
 * What a cell shows for one agent as exact integers: changed of the cell's elements, unique of the
 * agent's changed, changed also by agent `other` (pairs) of the agent's changed, or sign conflicts
 * of the cell's shared elements (the same for every agent). Null where the pairs are not counted.
 */
export function atlasRatio(
  stats: ModelStats,
  metric: AtlasMetric,
  agent: number,
  other: number,
): Ratio | null {
  const changed = stats.changed[agent] ?? 0;
  switch (metric) {
    case 'changed':
      return { part: changed, whole: stats.numel };
    case 'unique':
      return { part: stats.unique[agent] ?? 0, whole: changed };
    case 'sharedWith':
      return stats.pairs && other !== agent
        ? { part: stats.pairs[agent]?.[other] ?? 0, whole: changed }
        : null;
    case 'conflicts':
      return { part: stats.signConflicts, whole: sharedElements(stats) };
  }
}

export const OVERLAP_MODES = ['count', 'jaccard', 'smaller'] as const;
export type OverlapMode = (typeof OVERLAP_MODES)[number];

/** A pair's overlap as a ratio: Jaccard |a∩b| / |a∪b|, or |a∩b| / the smaller agent's changes. */
export function overlapRatio(
  both: number,
  changedA: number,
  changedB: number,
  mode: Exclude<OverlapMode, 'count'>,
): Ratio {
  return mode === 'jaccard'
    ? { part: both, whole: changedA + changedB - both }
    : { part: both, whole: Math.min(changedA, changedB) };
}

/** Share of a ratio in [0, 1]; 0 for an empty whole. */
export function share({ part, whole }: Ratio): number {
  return whole === 0 ? 0 : part / whole;
}

/**
 * Elements changed by exactly each agent set (bit t = agent t), from the exact counts: singles are
 * the unique counts, the full set counts[N], each set missing one agent t counts[N−1] − overlap[t][N−2],
 * and the pairs' own elements are pairs minus the larger sets that hold them. That fixes every set
 * for N ≤ 4; up to 8 the statistics carry the per-set counts themselves; otherwise null.
 */
export function agentSets(
  stats: Pick<ModelStats, 'agents' | 'counts' | 'overlap' | 'unique' | 'pairs' | 'sets'>,
): Map<number, number> | null {
  const n = stats.agents;
  if (n >= 1 && stats.sets?.length === 2 ** n)
    return new Map(
      stats.sets.flatMap((count, mask) => (mask === 0 ? [] : [[mask, count] as [number, number]])),
    );
  if (n < 1 || n > 4 || (n >= 2 && !stats.pairs)) return null;
  const full = (1 << n) - 1;
  const sets = new Map<number, number>();
  for (let t = 0; t < n; t++) sets.set(1 << t, stats.unique[t] ?? 0);
  if (n >= 2) sets.set(full, stats.counts[n] ?? 0);
  if (n >= 3)
    for (let t = 0; t < n; t++)
      sets.set(full & ~(1 << t), (stats.counts[n - 1] ?? 0) - (stats.overlap[t]?.[n - 2] ?? 0));
  for (let a = 0; a < n; a++)
    for (let b = a + 1; b < n; b++) {
      const pair = (1 << a) | (1 << b);
      if (sets.has(pair)) continue;
      let larger = 0;
      for (const [mask, count] of sets) if (mask !== pair && (mask & pair) === pair) larger += count;
      sets.set(pair, (stats.pairs?.[a]?.[b] ?? 0) - larger);
    }
  return sets;
}

/** The bits of a set mask as agent indices. */
export function setMembers(mask: number, agents: number): number[] {
  return Array.from({ length: agents }, (_, t) => t).filter((t) => (mask >> t) & 1);
}

/** A layerOf() group's axis label: the layer index (`12`), else the group's last segment (`lm_head`). */
export function shortLayerLabel(layer: string): string {
  return /\.(\d+)$/.exec(layer)?.[1] ?? layer.slice(layer.lastIndexOf('.') + 1);
}

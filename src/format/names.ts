// Tensor names to model structure: which block (embeddings, a numbered layer, the final norm, the
// head) and which projection-level module a tensor is, for the naming schemes of the common model
// families. A name no rule knows keeps its own path as its module: never a guess.

import { at } from '../io/checked.ts';

export type Block = 'embed' | 'layer' | 'final' | 'head' | 'other';

export interface TensorPlace {
  block: Block;
  /** The path up to the numbered container (`model.layers`, `transformer.h`); '' outside layers. */
  stack: string;
  /** The layer index inside its stack; null outside layers. */
  layer: number | null;
  /** Projection-level module (`q`, `gate`, `experts.down`, `norm_in`, …) or the name's own path. */
  module: string;
  /** The expert index of an MoE expert tensor; null otherwise. */
  expert: number | null;
}

/** The modules this parser knows, in the order a layer computes them (the atlas's column order). */
export const KNOWN_MODULES = [
  'embed',
  'pos_embed',
  'norm_in',
  'q',
  'k',
  'v',
  'qkv',
  'q_norm',
  'k_norm',
  'o',
  'attn',
  'norm_post_attn',
  'norm_pre_mlp',
  'router',
  'gate',
  'up',
  'gate_up',
  'down',
  'experts.gate',
  'experts.up',
  'experts.gate_up',
  'experts.down',
  'shared.gate',
  'shared.up',
  'shared.down',
  'shared.router',
  'norm_post_mlp',
  'norm',
  'head',
] as const;

/** Parameter names at the end of a tensor name: a module's weight and bias share its cell. */
const PARAMS = new Set(['weight', 'bias', 'scale', 'gamma', 'beta']);
const CONTAINERS = new Set(['layers', 'layer', 'h', 'blocks', 'block']);
const ATTENTION = new Set(['self_attn', 'attn', 'attention', 'self_attention']);
const MLP = new Set(['mlp', 'feed_forward', 'ffn', 'block_sparse_moe', 'moe']);

/** Segment → module, whatever its parent. */
const SEGMENT: Record<string, string> = {
  q_proj: 'q',
  k_proj: 'k',
  v_proj: 'v',
  o_proj: 'o',
  out_proj: 'o',
  wq: 'q',
  wk: 'k',
  wv: 'v',
  qkv_proj: 'qkv',
  c_attn: 'qkv',
  query_key_value: 'qkv',
  Wqkv: 'qkv',
  q_norm: 'q_norm',
  k_norm: 'k_norm',
  gate_proj: 'gate',
  up_proj: 'up',
  gate_up_proj: 'gate_up',
  down_proj: 'down',
  c_fc: 'up',
  fc1: 'up',
  dense_h_to_4h: 'up',
  fc2: 'down',
  dense_4h_to_h: 'down',
  router: 'router',
  input_layernorm: 'norm_in',
  ln_1: 'norm_in',
  ln_attn: 'norm_in',
  attention_norm: 'norm_in',
  post_attention_layernorm: 'norm_post_attn',
  ln_2: 'norm_post_attn',
  ln_mlp: 'norm_pre_mlp',
  ffn_norm: 'norm_pre_mlp',
  pre_feedforward_layernorm: 'norm_pre_mlp',
  post_feedforward_layernorm: 'norm_post_mlp',
};

/** Segments that mean one thing inside attention and another inside the MLP (GPT-2, Phi, Falcon). */
function contextual(segment: string, parent: string | undefined, moe: boolean): string | null {
  const inAttention = parent !== undefined && ATTENTION.has(parent);
  const inMlp = parent !== undefined && (MLP.has(parent) || parent === 'shared_expert' || moe);
  if (segment === 'c_proj' || segment === 'dense' || segment === 'wo')
    return inAttention ? 'o' : inMlp || segment === 'c_proj' ? 'down' : null;
  // Mixtral's experts: w1 gate, w3 up, w2 down; Llama's original feed_forward uses the same names.
  if (inMlp && segment === 'w1') return 'gate';
  if (inMlp && segment === 'w3') return 'up';
  if (inMlp && segment === 'w2') return 'down';
  // An MoE block's bare `gate` is the router (its experts' gates are `gate_proj` or `w1`).
  if (segment === 'gate' && parent !== undefined && MLP.has(parent)) return 'router';
  if (segment === 'shared_expert_gate') return 'shared.router';
  if (ATTENTION.has(segment)) return 'attn';
  return null;
}

function isInteger(segment: string | undefined): boolean {
  return segment !== undefined && /^\d+$/.test(segment);
}

/** The module of a layer-internal path (parameter suffix removed), or null when no rule knows it. */
function layerModule(path: string[]): { module: string | null; expert: number | null } {
  let expert: number | null = null;
  let prefix = '';
  const rest: string[] = [];
  for (let i = 0; i < path.length; i++) {
    const segment = at(path, i, 'tensor path');
    if (segment === 'experts' && isInteger(path[i + 1])) {
      expert = Number(path[i + 1]);
      prefix = 'experts.';
      i++;
    } else if (segment === 'shared_expert' || segment === 'shared_experts') {
      prefix = 'shared.';
      rest.push(segment);
    } else rest.push(segment);
  }
  const last = rest[rest.length - 1];
  if (last === undefined) return { module: null, expert };
  const found =
    SEGMENT[last] ??
    contextual(last, rest[rest.length - 2], prefix !== '') ??
    (/norm|^ln_/.test(last) ? 'norm' : null);
  if (found === null) return { module: null, expert };
  if (found === 'router' || found === 'shared.router' || found === 'attn' || /norm/.test(found))
    return { module: found, expert };
  return { module: `${prefix}${found}`, expert };
}

const EMBED = /^(?:embed_tokens|wte|word_embeddings|embed_in|tok_embeddings|embeddings|task_embed)$/;
const POS_EMBED = /^(?:wpe|embed_positions|position_embeddings)$/;
const HEAD = /^(?:lm_head|head|embed_out|output)$/;
const FINAL_NORM = /^(?:norm|ln_f|final_layernorm|final_layer_norm|norm_f)$/;

/** Where a tensor sits in the model, from its name alone. */
export function parseTensorName(name: string): TensorPlace {
  const all = name.split('.');
  const tail = all[all.length - 1];
  const param = all.length > 1 && tail !== undefined && PARAMS.has(tail) ? tail : null;
  const segments = param === null ? all : all.slice(0, -1);
  for (let i = 0; i < segments.length - 1; i++) {
    if (!CONTAINERS.has(at(segments, i, 'name segments')) || !isInteger(segments[i + 1])) continue;
    const inner = segments.slice(i + 2);
    const { module, expert } = layerModule(inner);
    // Unknown: the path inside the layer (the demo's bare `layers.0.weight` keeps `weight`).
    const own = inner.length > 0 ? inner.join('.') : (param ?? 'tensor');
    return {
      block: 'layer',
      stack: segments.slice(0, i + 1).join('.'),
      layer: Number(segments[i + 1]),
      module: module ?? own,
      expert,
    };
  }
  const last = segments[segments.length - 1] ?? name;
  const beforeLast = segments[segments.length - 2];
  const place = (block: Block, module: string): TensorPlace => ({
    block,
    stack: '',
    layer: null,
    module,
    expert: null,
  });
  if (EMBED.test(last)) return place('embed', 'embed');
  if (POS_EMBED.test(last)) return place('embed', 'pos_embed');
  if (HEAD.test(last) || (beforeLast !== undefined && HEAD.test(beforeLast) && last === 'linear'))
    return place('head', 'head');
  if (FINAL_NORM.test(last)) return place('final', 'norm');
  return place('other', segments.length > 0 ? segments.join('.') : name);
}

/** Stable key of a tensor's row (block and layer): one per layer of each stack. */
export function rowKey(place: TensorPlace): string {
  return place.block === 'layer' ? `${place.stack}.${place.layer ?? 0}` : place.block;
}

/** Short row label: `layers.3`, `h.3`; `embed`, `final`, `head`, `other` outside the layers. */
export function rowLabel(place: TensorPlace): string {
  if (place.block !== 'layer') return place.block;
  const container = place.stack.slice(place.stack.lastIndexOf('.') + 1);
  return `${container}.${place.layer ?? 0}`;
}

const BLOCK_ORDER: Record<Block, number> = { embed: 0, layer: 1, final: 2, head: 3, other: 4 };

/**
 * Orders places as a model computes them: embeddings, each stack's layers 0..L−1 (stacks in order
 * of first appearance in `stacks`), final norm, head, anything else.
 */
export function comparePlaces(a: TensorPlace, b: TensorPlace, stacks: readonly string[]): number {
  const block = BLOCK_ORDER[a.block] - BLOCK_ORDER[b.block];
  if (block !== 0) return block;
  if (a.block !== 'layer') return 0;
  const stack = stacks.indexOf(a.stack) - stacks.indexOf(b.stack);
  return stack !== 0 ? stack : (a.layer ?? 0) - (b.layer ?? 0);
}

/** Column order: known modules as a layer computes them, then unknown paths in first-seen order. */
export function compareModules(a: string, b: string, seen: readonly string[]): number {
  const rank = (m: string): number => {
    const known = (KNOWN_MODULES as readonly string[]).indexOf(m);
    return known >= 0 ? known : KNOWN_MODULES.length + seen.indexOf(m);
  };
  return rank(a) - rank(b);
}

// Byte layouts of the structs the host writes for the kernels (Params, Agent in
// shaders/common/window.wgsl); the unit tests check them against the WGSL by reflection.

import { epsilonF32 } from '../../methods/float32.ts';

export type ScalarType = 'u32' | 'f32';

/** Params members in declaration order; every member is one 4-byte scalar. */
export const PARAMS_FIELDS: readonly { name: string; type: ScalarType }[] = [
  { name: 'count', type: 'u32' },
  { name: 'slot_words', type: 'u32' },
  { name: 'start_lo', type: 'u32' },
  { name: 'start_hi', type: 'u32' },
  { name: 'groups_x', type: 'u32' },
  { name: 'groups', type: 'u32' },
  { name: 'epsilon', type: 'f32' },
  { name: 'scale', type: 'f32' },
  { name: 'name_hash', type: 'u32' },
  { name: 'seed', type: 'u32' },
  { name: 'digit_shift', type: 'u32' },
  { name: 'digit_bits', type: 'u32' },
  { name: 'normalize', type: 'u32' },
  { name: 'chunk_base', type: 'u32' },
  /** Always 0: an operand the compiler cannot know, so products stay unfused (unfused_product). */
  { name: 'unfused', type: 'u32' },
];

/** Uniform buffer size: the struct rounded up to 16 bytes. */
export const PARAMS_BYTES = Math.ceil((PARAMS_FIELDS.length * 4) / 16) * 16;

export const AGENT_FIELDS: readonly { name: string; type: ScalarType }[] = [
  { name: 'lambda', type: 'f32' },
  { name: 'weight', type: 'f32' },
  { name: 'inv_density', type: 'f32' },
  { name: 'keep_below', type: 'u32' },
  { name: 'threshold', type: 'u32' },
  { name: 'ties_to_keep', type: 'u32' },
  { name: 'prefix', type: 'u32' },
  { name: 'searching', type: 'u32' },
  { name: 'outlier_threshold', type: 'u32' },
  { name: 'outliers_to_drop', type: 'u32' },
  { name: 'tie_first', type: 'u32' },
  { name: 'tie_end', type: 'u32' },
  { name: 'outlier_tie_first', type: 'u32' },
  { name: 'outlier_tie_end', type: 'u32' },
];

/** Array stride of Agent. */
export const AGENT_BYTES = AGENT_FIELDS.length * 4;

export interface WindowParams {
  count: number;
  slotWords: number;
  /** Index in the tensor of the window's first element (< 2^53). */
  start: number;
  groupsX: number;
  groups: number;
  epsilon?: number;
  scale?: number;
  nameHash?: number;
  seed?: number;
  digitShift?: number;
  digitBits?: number;
  normalize?: boolean;
  /** TIES count pass: index of the window's first chunk (count-pass workgroup) in the tensor. */
  chunkBase?: number;
}

export interface AgentParams {
  lambda?: number;
  weight?: number;
  invDensity?: number;
  keepBelow?: number;
  threshold?: number;
  tiesToKeep?: number;
  prefix?: number;
  searching?: boolean;
  /** Model Breadcrumbs: the top-k of the outliers dropped, as threshold and tiesToKeep are the kept. */
  outlierThreshold?: number;
  outliersToDrop?: number;
  /**
   * TIES tie-break: the elements [tieFirst, tieEnd) of the tensor that hold the first tie not kept
   * (topk-select.ts TieSpan): only there are ties marked, tiesToKeep then counting from tieFirst.
   * Equal (the default): marked everywhere.
   */
  tieFirst?: number;
  tieEnd?: number;
  /** Model Breadcrumbs: the same for the outliers' top-k (outliersToDrop counting from outlierTieFirst). */
  outlierTieFirst?: number;
  outlierTieEnd?: number;
}

function put(view: DataView, offset: number, type: ScalarType, value: number): void {
  if (type === 'f32') view.setFloat32(offset, value, true);
  else view.setUint32(offset, value >>> 0, true);
}

export function encodeParams(p: WindowParams): Uint8Array {
  const values: Record<string, number> = {
    count: p.count,
    slot_words: p.slotWords,
    start_lo: p.start % 2 ** 32,
    start_hi: Math.floor(p.start / 2 ** 32),
    groups_x: p.groupsX,
    groups: p.groups,
    epsilon: epsilonF32(p.epsilon ?? 0),
    scale: p.scale ?? 1,
    name_hash: p.nameHash ?? 0,
    seed: p.seed ?? 0,
    digit_shift: p.digitShift ?? 0,
    digit_bits: p.digitBits ?? 0,
    normalize: p.normalize ? 1 : 0,
    chunk_base: p.chunkBase ?? 0,
    unfused: 0,
  };
  const bytes = new Uint8Array(PARAMS_BYTES);
  const view = new DataView(bytes.buffer);
  PARAMS_FIELDS.forEach((field, i) => put(view, i * 4, field.type, values[field.name]!));
  return bytes;
}

export function encodeAgents(agents: readonly AgentParams[]): Uint8Array {
  const bytes = new Uint8Array(Math.max(1, agents.length) * AGENT_BYTES);
  const view = new DataView(bytes.buffer);
  agents.forEach((a, t) => {
    const values: Record<string, number> = {
      lambda: a.lambda ?? 1,
      weight: a.weight ?? 1,
      inv_density: a.invDensity ?? 1,
      keep_below: a.keepBelow ?? 0,
      threshold: a.threshold ?? 0,
      ties_to_keep: a.tiesToKeep ?? 0,
      prefix: a.prefix ?? 0,
      searching: a.searching ? 1 : 0,
      outlier_threshold: a.outlierThreshold ?? 0,
      outliers_to_drop: a.outliersToDrop ?? 0,
      tie_first: a.tieFirst ?? 0,
      tie_end: a.tieEnd ?? 0,
      outlier_tie_first: a.outlierTieFirst ?? 0,
      outlier_tie_end: a.outlierTieEnd ?? 0,
    };
    AGENT_FIELDS.forEach((field, i) => put(view, t * AGENT_BYTES + i * 4, field.type, values[field.name]!));
  });
  return bytes;
}

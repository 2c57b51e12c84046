// Where the forward pass gets a model's tensors: by name, checked against the shape config.json
// implies, read straight from the folder's files (never the whole model: one tensor, one block of the
// output head or the embedding rows of the probe tokens at a time).

import { decodeFloats, dtypeBits, isMergeableDtype, type FloatDtype } from '../format/dtype.ts';
import type { Model } from '../format/model.ts';
import type { StoredTensor } from './backend.ts';
import { EvalError, type ForwardSpec } from './config.ts';

/** A model's tensors as the forward pass reads them (a folder, or a merge computed on the fly). */
export interface WeightSource {
  readonly label: string;
  has(name: string): boolean;
  /** The whole tensor, checked to have `shape`. */
  tensor(name: string, shape: readonly number[]): Promise<StoredTensor>;
  /**
   * A 2-D tensor [rows, cols] in blocks of `blockRows` rows, in order, each handed to `each` with its
   * first row and awaited before the next is made (the output head, read within the memory budget).
   */
  blocks(
    name: string,
    shape: readonly [number, number],
    blockRows: number,
    each: (start: number, block: StoredTensor) => Promise<void>,
  ): Promise<void>;
  /** The given rows of a 2-D tensor, decoded to f32 (the embedding of the probe tokens). */
  gather(name: string, shape: readonly [number, number], ids: Int32Array): Promise<Float32Array>;
}

export const EMBED = 'model.embed_tokens.weight';
export const FINAL_NORM = 'model.norm.weight';
export const LM_HEAD = 'lm_head.weight';

/** The name of a layer's tensor: `model.layers.{i}.{suffix}`. */
export function layerTensor(layer: number, suffix: string): string {
  return `model.layers.${layer}.${suffix}`;
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Bytes of one stored element. */
export function elementBytes(dtype: FloatDtype): number {
  return dtypeBits(dtype) / 8;
}

/** Rows [start, start + bytes' rows) of a 2-D tensor, as a StoredTensor of their own. */
export function rowBlock(
  name: string,
  dtype: FloatDtype,
  shape: readonly [number, number],
  start: number,
  bytes: Uint8Array,
): StoredTensor {
  const count = bytes.length / (shape[1] * elementBytes(dtype));
  return { name: `${name}[${start}:${start + count}]`, dtype, shape: [count, shape[1]], bytes };
}

/** A WeightSource over a model folder opened by format/model.ts. */
export function folderWeights(model: Model, label = model.name): WeightSource {
  function info(name: string, shape: readonly number[]) {
    const tensor = model.tensors.get(name);
    if (!tensor) throw new EvalError(label, `has no tensor ${name}, which its config.json implies.`);
    if (!isMergeableDtype(tensor.dtype))
      throw new EvalError(label, `${name} is ${tensor.dtype}; the forward pass reads BF16, F16 and F32.`);
    if (!sameShape(tensor.shape, shape))
      throw new EvalError(
        label,
        `${name} has shape [${tensor.shape.join(', ')}]; config.json implies [${shape.join(', ')}].`,
      );
    return { ...tensor, dtype: tensor.dtype };
  }
  async function read(file: string, offset: number, length: number): Promise<Uint8Array> {
    return model.source(file).read(offset, length);
  }
  return {
    label,
    has: (name) => model.tensors.has(name),
    async tensor(name, shape) {
      const t = info(name, shape);
      return { name, dtype: t.dtype, shape, bytes: await read(t.file, t.offset, t.end - t.begin) };
    },
    async blocks(name, shape, blockRows, each) {
      const t = info(name, shape);
      const rowBytes = shape[1] * elementBytes(t.dtype);
      for (let start = 0; start < shape[0]; start += blockRows) {
        const count = Math.min(blockRows, shape[0] - start);
        const bytes = await read(t.file, t.offset + start * rowBytes, count * rowBytes);
        await each(start, rowBlock(name, t.dtype, shape, start, bytes));
      }
    },
    async gather(name, shape, ids) {
      const t = info(name, shape);
      const cols = shape[1];
      const rowBytes = cols * elementBytes(t.dtype);
      const out = new Float32Array(ids.length * cols);
      const cache = new Map<number, Float64Array>();
      for (let r = 0; r < ids.length; r++) {
        const id = ids[r]!;
        if (id < 0 || id >= shape[0])
          throw new EvalError(label, `token id ${id} is outside ${name}'s ${shape[0]} rows.`);
        let row = cache.get(id);
        if (!row) {
          row = decodeFloats(t.dtype, await read(t.file, t.offset + id * rowBytes, rowBytes), cols);
          cache.set(id, row);
        }
        out.set(row, r * cols);
      }
      return out;
    },
  };
}

/** The shapes config.json implies for each tensor of layer i (bias and norm entries where present). */
export function layerShapes(spec: ForwardSpec): Record<string, readonly number[]> {
  const { hidden, heads, kvHeads, headDim, intermediate } = spec;
  const q = heads * headDim;
  const kv = kvHeads * headDim;
  return {
    'input_layernorm.weight': [hidden],
    'self_attn.q_proj.weight': [q, hidden],
    'self_attn.k_proj.weight': [kv, hidden],
    'self_attn.v_proj.weight': [kv, hidden],
    'self_attn.o_proj.weight': [hidden, q],
    'self_attn.q_proj.bias': [q],
    'self_attn.k_proj.bias': [kv],
    'self_attn.v_proj.bias': [kv],
    'self_attn.o_proj.bias': [hidden],
    'self_attn.q_norm.weight': [headDim],
    'self_attn.k_norm.weight': [headDim],
    'post_attention_layernorm.weight': [hidden],
    'mlp.gate_proj.weight': [intermediate, hidden],
    'mlp.up_proj.weight': [intermediate, hidden],
    'mlp.down_proj.weight': [hidden, intermediate],
    'mlp.gate_proj.bias': [intermediate],
    'mlp.up_proj.bias': [intermediate],
    'mlp.down_proj.bias': [hidden],
  };
}

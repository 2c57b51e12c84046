// A merge that is scored before it is written: a WeightSource whose tensors are merged on request by
// the same engine, parameters and output dtype as mergeModels would write them, so scoring it gives
// the numbers that writing the merge and evaluating the folder would give. A merge is per tensor, so
// the forward pass asks for one layer's tensors at a time and nothing else of the merge exists.

import { analyzeModels, planOutput, tensorInput } from '../driver/driver.ts';
import type { AnalysisResult } from '../driver/job.ts';
import type { MergeEngine } from '../engine/contract.ts';
import { decodeFloats, type FloatDtype } from '../format/dtype.ts';
import type { Model } from '../format/model.ts';
import { methodOf } from '../methods/registry/index.ts';
import { paramsForTensor } from '../methods/resolve.ts';
import { ramLambdas } from '../methods/stats.ts';
import type { MethodParams } from '../methods/types.ts';
import type { StoredTensor } from './backend.ts';
import { EvalError } from './config.ts';
import { elementBytes, folderWeights, rowBlock, sameShape, type WeightSource } from './weights.ts';

export interface CandidateRecipe {
  label: string;
  params: MethodParams;
  /** Per-tensor parameters (a recipe's gradients and filters). */
  perTensor?: (name: string) => MethodParams;
  /** Output dtype of merged tensors; undefined: each tensor's own (as the merge would write). */
  outDtype?: FloatDtype;
}

export interface CandidateInputs {
  base: Model;
  agents: Model[];
  engine: MergeEngine;
  signal?: AbortSignal;
  /** Statistics by ε, shared by every candidate whose λ come from them (RAM+, RAM+s). */
  analyses?: Map<number, Promise<AnalysisResult>>;
}

/** The λ a candidate merges with: from the (shared) statistics pass where its method needs them. */
async function lambdasOf(inputs: CandidateInputs, params: MethodParams): Promise<number[]> {
  if (methodOf(params.method).plan.lambdas !== 'global') return inputs.agents.map(() => 1);
  const analyses = (inputs.analyses ??= new Map());
  let analysis = analyses.get(params.epsilon);
  if (!analysis) {
    analysis = analyzeModels({ ...inputs, epsilon: params.epsilon });
    analyses.set(params.epsilon, analysis);
  }
  return ramLambdas((await analysis).totals, params.method, params.r, params.alpha);
}

export async function candidateWeights(
  inputs: CandidateInputs,
  recipe: CandidateRecipe,
): Promise<WeightSource> {
  const { base, agents, engine } = inputs;
  const models = [base, ...agents];
  const { mergedNames, specs } = planOutput(base, agents, recipe.outDtype);
  const dtypes = new Map(specs.map((s) => [s.name, s.dtype as FloatDtype]));
  const lambdas = await lambdasOf(inputs, recipe.params);
  const plain = folderWeights(base, recipe.label);

  /** Merges tensor `name`, handing each emitted byte range to `keep` with its offset in the tensor. */
  async function merge(
    name: string,
    shape: readonly number[],
    keep: (offset: number, bytes: Uint8Array) => void | Promise<void>,
  ) {
    const info = base.tensors.get(name);
    if (!info)
      throw new EvalError(recipe.label, `the base has no tensor ${name}, which its config.json implies.`);
    if (!sameShape(info.shape, shape))
      throw new EvalError(
        recipe.label,
        `${name} has shape [${info.shape.join(', ')}]; config.json implies [${shape.join(', ')}].`,
      );
    const dtype = dtypes.get(name)!;
    let offset = 0;
    await engine.merge(tensorInput(models, name), {
      params: paramsForTensor(recipe.params, recipe.perTensor, name),
      lambdas,
      outDtype: dtype,
      ...(inputs.signal ? { signal: inputs.signal } : {}),
      emit: async (bytes) => {
        await keep(offset, bytes);
        offset += bytes.length;
      },
    });
    return dtype;
  }

  /** The bytes [start, end) of the merged tensor, copied out of the stream as it passes. */
  async function slice(name: string, shape: readonly number[], start: number, end: number) {
    const out = new Uint8Array(end - start);
    const dtype = await merge(name, shape, (offset, bytes) => {
      const from = Math.max(start, offset);
      const to = Math.min(end, offset + bytes.length);
      if (from < to) out.set(bytes.subarray(from - offset, to - offset), from - start);
    });
    return { dtype, bytes: out };
  }

  return {
    label: recipe.label,
    has: (name) => base.tensors.has(name),
    async tensor(name, shape): Promise<StoredTensor> {
      if (!mergedNames.has(name)) return plain.tensor(name, shape);
      const dtype = dtypes.get(name)!;
      const count = shape.reduce((a, b) => a * b, 1);
      const { bytes } = await slice(name, shape, 0, count * elementBytes(dtype));
      return { name, dtype, shape, bytes };
    },
    // One merge of the whole tensor, cut into blocks as its bytes stream past (a block is handed on,
    // and awaited, before the merge emits more): merging it again for every block cost one full
    // merge of the output head per block.
    async blocks(name, shape, blockRows, each) {
      if (!mergedNames.has(name)) return plain.blocks(name, shape, blockRows, each);
      const dtype = dtypes.get(name)!;
      const rowBytes = shape[1] * elementBytes(dtype);
      let start = 0;
      let block = new Uint8Array(Math.min(blockRows, shape[0]) * rowBytes);
      let filled = 0;
      const handOn = async () => {
        await each(start, rowBlock(name, dtype, shape, start, block.subarray(0, filled)));
        start += filled / rowBytes;
        filled = 0;
        block = new Uint8Array(Math.min(blockRows, shape[0] - start) * rowBytes);
      };
      await merge(name, shape, async (_offset, bytes) => {
        for (let at = 0; at < bytes.length;) {
          const n = Math.min(bytes.length - at, block.length - filled);
          block.set(bytes.subarray(at, at + n), filled);
          filled += n;
          at += n;
          if (filled === block.length && block.length > 0) await handOn();
        }
      });
      if (filled > 0) await handOn();
    },
    async gather(name, shape, ids) {
      if (!mergedNames.has(name)) return plain.gather(name, shape, ids);
      const dtype = dtypes.get(name)!;
      const cols = shape[1];
      const rowBytes = cols * elementBytes(dtype);
      const wanted = new Map<number, Uint8Array>();
      for (const id of ids) {
        if (id < 0 || id >= shape[0])
          throw new EvalError(recipe.label, `token id ${id} is outside ${name}'s ${shape[0]} rows.`);
        wanted.set(id, new Uint8Array(rowBytes));
      }
      await merge(name, shape, (offset, bytes) => {
        const first = Math.floor(offset / rowBytes);
        const last = Math.floor((offset + bytes.length - 1) / rowBytes);
        for (let row = first; row <= last; row++) {
          const target = wanted.get(row);
          if (!target) continue;
          const from = Math.max(row * rowBytes, offset);
          const to = Math.min((row + 1) * rowBytes, offset + bytes.length);
          target.set(bytes.subarray(from - offset, to - offset), from - row * rowBytes);
        }
      });
      const out = new Float32Array(ids.length * cols);
      ids.forEach((id, r) => out.set(decodeFloats(dtype, wanted.get(id)!, cols), r * cols));
      return out;
    },
  };
}

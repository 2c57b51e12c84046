// A MergeEngine without a GPU: streams each tensor in windows through the f64 reference (the TIES
// top-k by the same radix select as the GPU, over windows), for machines with no usable adapter.

import { decodeFloats, dtypeBits, encodeFloats } from '../format/dtype.ts';
import { checkMergeOptions, forTensor, throwIfAborted } from '../engine/errors.ts';
import type { MergeEngine, MergeOptions, TensorInput, TensorStats } from '../engine/types.ts';
import { magnitudeKey, taskVector } from './float32.ts';
import {
  accumulateStats,
  dareTaus,
  denseTaus,
  linearCombine,
  ramCombine,
  taskArithmeticCombine,
  tiesCombine,
  type SparseTaus,
  type TensorValues,
} from './reference.ts';
import { RADIX_DIGITS, startTopK, stepTopK, topKCount, topKKept, type TopKState } from './select.ts';
import { deriveTensorStats, emptyTensorStats, tensorLocalLambdas } from './stats.ts';
import { dareScalesFor } from './dare-norms.ts';

export interface CpuEngineOptions {
  agents: number;
  /** Elements per window read at once (default 2^20). */
  maxWindowElements?: number;
}

export function createCpuEngine(options: CpuEngineOptions): MergeEngine {
  const n = options.agents;
  const windowElements = Math.max(1, Math.floor(options.maxWindowElements ?? 2 ** 20));

  async function readWindow(
    tensor: TensorInput,
    start: number,
    count: number,
    withBase = true,
  ): Promise<TensorValues> {
    const bytes = dtypeBits(tensor.dtype) / 8;
    const slots = await Promise.all(
      Array.from({ length: n + 1 }, async (_, k) => {
        if (k === 0 && !withBase) return new Float64Array(count);
        const raw = new Uint8Array(count * bytes);
        await tensor.read(k, start, count, raw);
        return decodeFloats(tensor.dtype, raw, count);
      }),
    );
    return { name: tensor.name, dtype: tensor.dtype, base: slots[0]!, agents: slots.slice(1) };
  }

  async function* windows(
    tensor: TensorInput,
    signal: AbortSignal | undefined,
    withBase = true,
  ): AsyncGenerator<{ start: number; values: TensorValues }> {
    for (let start = 0; start < tensor.numel; start += windowElements) {
      throwIfAborted(signal);
      const count = Math.min(windowElements, tensor.numel - start);
      yield { start, values: await readWindow(tensor, start, count, withBase) };
    }
  }

  async function analyze(tensor: TensorInput, epsilon: number, signal?: AbortSignal): Promise<TensorStats> {
    const stats = emptyTensorStats(tensor.name, tensor.dtype, tensor.numel, n);
    for await (const { values } of windows(tensor, signal)) accumulateStats(stats, values, epsilon);
    return deriveTensorStats(stats);
  }

  /** Settles every agent's top-k threshold with one histogram pass per radix digit, as the GPU does. */
  async function topKStates(
    tensor: TensorInput,
    densities: readonly number[],
    signal?: AbortSignal,
  ): Promise<TopKState[]> {
    let states = densities.map((d) => startTopK(topKCount(d, tensor.numel), tensor.numel));
    for (let digit = 0; digit < RADIX_DIGITS.length && states.some((s) => s.searching); digit++) {
      const { shift, bits } = RADIX_DIGITS[digit]!;
      const high = shift + bits;
      const histograms = states.map(() => new Float64Array(1 << bits));
      for await (const { values } of windows(tensor, signal)) {
        states.forEach((state, t) => {
          if (!state.searching) return;
          const agent = values.agents[t]!;
          const histogram = histograms[t]!;
          for (let i = 0; i < agent.length; i++) {
            const key = magnitudeKey(taskVector(agent[i]!, values.base[i]!));
            // Shifts by 31 are fine in JS; the prefix match selects keys under the chosen high digits.
            if (key !== 0 && key >>> high === state.prefix >>> high)
              histogram[(key >>> shift) & ((1 << bits) - 1)]!++;
          }
        });
      }
      states = states.map((state, t) => stepTopK(state, histograms[t]!, digit));
    }
    return states;
  }

  function topKWindow(values: TensorValues, states: readonly TopKState[], tieRanks: number[]): SparseTaus {
    const taus = denseTaus(values);
    taus.votes.forEach((tau, t) => {
      const state = states[t]!;
      for (let i = 0; i < tau.length; i++) {
        const key = magnitudeKey(tau[i]!);
        const rank = key === state.threshold ? tieRanks[t]!++ : 0;
        if (topKKept(state, key, rank)) continue;
        tau[i] = 0;
        taus.values[t]![i] = 0;
      }
    });
    return taus;
  }

  async function merge(tensor: TensorInput, options: MergeOptions): Promise<void> {
    const { signal } = options;
    const dareScales = await dareScalesFor(tensor, options.params, signal, windowElements);
    const params = dareScales ? { ...options.params, dareScales } : options.params;
    const lambdas = checkMergeOptions(options, n);
    let combine: (values: TensorValues, start: number) => Float64Array;
    switch (params.method) {
      case 'ram':
      case 'ramplus':
      case 'ramplus_soft':
        combine = (v) => ramCombine(v, lambdas, params.epsilon);
        break;
      case 'ramplus_tl': {
        const stats = await analyze(tensor, params.epsilon, signal);
        const local = tensorLocalLambdas(stats, params.r, params.alpha, params.epsilon);
        combine = (v) => ramCombine(v, local, params.epsilon);
        break;
      }
      case 'linear':
        combine = (v) => linearCombine(v, params.weights, params.normalize);
        break;
      case 'task_arithmetic':
        combine = (v) =>
          taskArithmeticCombine(v, denseTaus(v), params.weights, params.lambda, params.normalize);
        break;
      case 'dare_linear':
        combine = (v, start) =>
          taskArithmeticCombine(
            v,
            dareTaus(v, start, params),
            params.weights,
            params.lambda,
            params.normalize,
          );
        break;
      case 'ties': {
        const states = await topKStates(tensor, params.density, signal);
        const tieRanks = new Array<number>(n).fill(0);
        combine = (v) =>
          tiesCombine(v, topKWindow(v, states, tieRanks), params.weights, params.lambda, params.normalize);
        break;
      }
      case 'dare_ties':
        combine = (v, start) =>
          tiesCombine(v, dareTaus(v, start, params), params.weights, params.lambda, params.normalize);
        break;
    }
    const inputBytes = ((n + 1) * dtypeBits(tensor.dtype)) / 8;
    for await (const { start, values } of windows(tensor, signal, params.method !== 'linear')) {
      await options.emit(encodeFloats(options.outDtype, combine(values, start)));
      options.onProgress?.((start + values.base.length) * inputBytes);
    }
  }

  return {
    kind: 'cpu',
    description: 'CPU reference (no GPU)',
    agents: n,
    analyze: (tensor, epsilon, signal) => forTensor(tensor.name, () => analyze(tensor, epsilon, signal)),
    merge: (tensor, options) => forTensor(tensor.name, () => merge(tensor, options)),
    destroy: () => undefined,
  };
}

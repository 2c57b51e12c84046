// A MergeEngine without a GPU: streams each tensor in windows through the f64 reference (the TIES
// top-k by the same radix select as the GPU, over windows), for machines with no usable adapter.

import { decodeFloats, dtypeBits, encodeFloats } from '../format/dtype.ts';
import { checkMergeOptions, forTensor } from './contract.ts';
import { NonFiniteTally } from '../methods/errors.ts';
import { throwIfAborted } from '../io/abort.ts';
import type { MergeEngine, MergeOptions } from './contract.ts';
import type { TensorInput, TensorStats } from '../methods/tensors.ts';
import { tauKey } from '../methods/float32.ts';
import {
  accumulateBranches,
  accumulateStats,
  combineWith,
  denseTaus,
  keepUnchanged,
  scanNonFinite,
  type SparseTaus,
  type TensorValues,
} from '../methods/reference.ts';
import { bandCounts } from '../methods/band.ts';
import { DEFAULT_GAMMA, DEFAULT_SLERP_T } from '../methods/params.ts';
import { methodOf, type Sparsify } from '../methods/registry/index.ts';
import type { MethodParams } from '../methods/types.ts';
import { RADIX_DIGITS, startTopK, stepTopK, topKCount, topKKept, type TopKState } from '../methods/select.ts';
import { deriveTensorStats, emptyTensorStats, tensorLocalLambdas } from '../methods/stats.ts';
import { emptyDareNorms, l1Scales } from '../methods/dare-norms.ts';
import { SPARSIFIERS, type LocalSparsifier } from '../methods/sparsifiers.ts';
import {
  accumulateSlerpSums,
  emptySlerpSums,
  slerpAgentsProblem,
  slerpCoefficients,
  type SlerpCoefficients,
} from '../methods/slerp.ts';

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
    const raws = await Promise.all(
      Array.from({ length: n + 1 }, async (_, k) => {
        const raw = new Uint8Array(count * bytes);
        if (k > 0 || withBase) await tensor.read(k, start, count, raw);
        return raw;
      }),
    );
    const slots = raws.map((raw) => decodeFloats(tensor.dtype, raw, count));
    // The stored bits too: the non-finite rule compares bit patterns, NaN payloads included.
    const bits = raws.map((raw) =>
      bytes === 2 ? new Uint16Array(raw.buffer, 0, count) : new Uint32Array(raw.buffer, 0, count),
    );
    return {
      name: tensor.name,
      dtype: tensor.dtype,
      base: slots[0]!,
      agents: slots.slice(1),
      bits,
      ...(tensor.shape ? { shape: tensor.shape } : {}),
    };
  }

  /** `size`: elements per window (a sparsifier's may hold whole slabs). */
  async function* windows(
    tensor: TensorInput,
    signal: AbortSignal | undefined,
    withBase = true,
    size = windowElements,
  ): AsyncGenerator<{ start: number; values: TensorValues }> {
    for (let start = 0; start < tensor.numel; start += size) {
      throwIfAborted(signal);
      const count = Math.min(size, tensor.numel - start);
      yield { start, values: await readWindow(tensor, start, count, withBase) };
    }
  }

  async function analyze(tensor: TensorInput, epsilon: number, signal?: AbortSignal): Promise<TensorStats> {
    const stats = emptyTensorStats(tensor.name, tensor.dtype, tensor.numel, n);
    for await (const { values } of windows(tensor, signal)) accumulateStats(stats, values, epsilon);
    return deriveTensorStats(stats);
  }

  /**
   * Settles a top-k threshold per count (count i ranks agent i mod N) with one histogram pass per radix
   * digit, as the GPU does.
   */
  async function topKStates(
    tensor: TensorInput,
    counts: readonly number[],
    signal?: AbortSignal,
  ): Promise<TopKState[]> {
    let states = counts.map((k) => startTopK(k, tensor.numel));
    for (let digit = 0; digit < RADIX_DIGITS.length && states.some((s) => s.searching); digit++) {
      const { shift, bits } = RADIX_DIGITS[digit]!;
      const high = shift + bits;
      const histograms = states.map(() => new Float64Array(1 << bits));
      for await (const { values } of windows(tensor, signal)) {
        states.forEach((state, i) => {
          if (!state.searching) return;
          const agent = values.agents[i % n]!;
          const histogram = histograms[i]!;
          for (let e = 0; e < agent.length; e++) {
            const key = tauKey(agent[e]!, values.base[e]!);
            // Shifts by 31 are fine in JS; the prefix match selects keys under the chosen high digits.
            if (key !== 0 && key >>> high === state.prefix >>> high)
              histogram[(key >>> shift) & ((1 << bits) - 1)]!++;
          }
        });
      }
      states = states.map((state, i) => stepTopK(state, histograms[i]!, digit));
    }
    return states;
  }

  /**
   * τ of one window kept where agent t is in the top-k of states[t] and, with `outliers`, not in the
   * top-k of outliers[t]; `tieRanks` counts each state's ties over the windows so far.
   */
  function topKWindow(
    values: TensorValues,
    states: readonly TopKState[],
    tieRanks: number[],
    outliers?: readonly TopKState[],
  ): SparseTaus {
    const taus = denseTaus(values);
    const kept = (state: TopKState, key: number, i: number): boolean =>
      topKKept(state, key, key === state.threshold ? tieRanks[i]!++ : 0);
    taus.votes.forEach((tau, t) => {
      const state = states[t]!;
      const outlier = outliers?.[t];
      for (let i = 0; i < tau.length; i++) {
        const key = tauKey(values.agents[t]![i]!, values.base[i]!);
        // Both ranks advance on every tie, so the second test must not be skipped by the first.
        const inTop = kept(state, key, t);
        const dropped = outlier ? kept(outlier, key, n + t) : false;
        if (inTop && !dropped) continue;
        tau[i] = 0;
        taus.values[t]![i] = 0;
      }
    });
    return taus;
  }

  /** The method's sparsification of τ, window by window, after the passes it needs over the tensor. */
  async function sparsifier(
    tensor: TensorInput,
    params: MethodParams,
    sparsify: Sparsify | undefined,
    signal: AbortSignal | undefined,
  ): Promise<(values: TensorValues, start: number) => SparseTaus> {
    if (sparsify === undefined) return (v) => denseTaus(v);
    const local = SPARSIFIERS[sparsify].local;
    if (local) return (v, start) => local.taus(v, start, params);
    const tieRanks = new Array<number>(2 * n).fill(0);
    if (sparsify === 'topk') {
      const states = await topKStates(
        tensor,
        params.density.map((d) => topKCount(d, tensor.numel)),
        signal,
      );
      return (v) => topKWindow(v, states, tieRanks);
    }
    const bands = params.density.map((d, t) =>
      bandCounts(d, params.gamma?.[t] ?? DEFAULT_GAMMA, tensor.numel),
    );
    const states = await topKStates(
      tensor,
      [...bands.map((b) => b.outliers + b.kept), ...bands.map((b) => b.outliers)],
      signal,
    );
    return (v) => topKWindow(v, states.slice(0, n), tieRanks, states.slice(n));
  }

  /**
   * A window-local sparsifier's factors (its scalePlan): the L1 rule's norms pass reads the tensor
   * once, in the merge's own windows.
   */
  async function localScales(
    tensor: TensorInput,
    local: LocalSparsifier,
    params: MethodParams,
    size: number,
    signal: AbortSignal | undefined,
  ): Promise<readonly number[] | undefined> {
    const plan = local.scalePlan(params);
    if (plan !== 'pass') return plan;
    const norms = emptyDareNorms(n);
    for await (const { start, values } of windows(tensor, signal, true, size))
      local.accumulateNorms(norms, values, start, params);
    return l1Scales(norms);
  }

  /** SLERP's coefficients from a pass over the whole tensor. */
  async function slerpPass(
    tensor: TensorInput,
    params: MethodParams,
    signal: AbortSignal | undefined,
  ): Promise<SlerpCoefficients> {
    const problem = slerpAgentsProblem(n);
    if (problem) throw new RangeError(problem);
    const sums = emptySlerpSums();
    for await (const { values } of windows(tensor, signal))
      accumulateSlerpSums(sums, values.base, values.agents[0]!);
    return slerpCoefficients(sums, params.t ?? DEFAULT_SLERP_T);
  }

  async function merge(tensor: TensorInput, options: MergeOptions): Promise<void> {
    const { signal } = options;
    const { plan } = methodOf(options.params.method);
    const windowLocal = plan.sparsify && SPARSIFIERS[plan.sparsify].local;
    windowLocal?.check?.(options.params);
    const size = windowLocal?.windowElements?.(tensor.shape, tensor.numel, windowElements) ?? windowElements;
    const dareScales = windowLocal
      ? await localScales(tensor, windowLocal, options.params, size, signal)
      : undefined;
    const params = dareScales ? { ...options.params, dareScales: [...dareScales] } : options.params;
    const lambdas = checkMergeOptions(options, n);
    const slerp = plan.combine === 'slerp' ? await slerpPass(tensor, params, signal) : undefined;
    let local = lambdas;
    if (plan.lambdas === 'tensor') {
      const stats = await analyze(tensor, params.epsilon, signal);
      local = tensorLocalLambdas(stats, params.r, params.alpha, params.epsilon);
      options.onTensorLambdas?.(local);
    }
    const sparse = await sparsifier(tensor, params, plan.sparsify, signal);
    // Only a sparsified merge counts what it kept; RAM's and the dense merges' branches are the statistics'.
    const branches = plan.sparsify !== undefined ? options.branches : undefined;
    const inputBytes = ((n + 1) * dtypeBits(tensor.dtype)) / 8;
    const withBase = plan.combine !== 'linear';
    const tally = new NonFiniteTally(n + 1);
    for await (const { start, values } of windows(tensor, signal, withBase, size)) {
      const scan = scanNonFinite(values, withBase);
      // Once per window: the top-k's tie ranks advance as it runs.
      let taus: SparseTaus | undefined;
      const sparsified = (): SparseTaus => (taus ??= sparse(values, start));
      const out = combineWith(plan, values, params, local, sparsified, slerp);
      if (branches) accumulateBranches(branches, sparsified(), params.weights, plan.combine === 'ties');
      keepUnchanged(out, values, scan, withBase);
      const encoded = encodeFloats(options.outDtype, out);
      // Overflow is judged on the stored output: f16 overflows long before f64 does.
      const stored = decodeFloats(options.outDtype, encoded, out.length);
      let overflow = 0;
      for (let i = 0; i < out.length; i++)
        if (!scan.nonFinite[i] && !scan.kept[i] && !Number.isFinite(stored[i]!)) overflow++;
      tally.add(scan.count, overflow, scan.perModel);
      // After a bad window nothing more is emitted; the rest is only counted for the error.
      if (!tally.bad) await options.emit(encoded);
      options.onProgress?.((start + values.base.length) * inputBytes);
    }
    tally.throwIfBad();
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

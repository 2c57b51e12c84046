// The passes that sum something over a whole tensor before (or instead of) a merge, given as data:
// a kernel, the buffer its per-window result lands in, the parameters it reads, and how each window's
// result is added up. The statistics, RAM+'s tensor-local overlap counts, DARE's L1 norms and SLERP's
// sums are entries of one shape (a method's own module may add more), run by runReduce over
// the pass runner's walk (pass-runner.ts).

import { fnv1a32 } from '../../methods/rng.ts';
import { emptyTensorStats } from '../../methods/stats.ts';
import { emptyDareNorms, type DareNorms } from '../../methods/dare-norms.ts';
import type { TensorStats } from '../../methods/tensors.ts';
import type { KernelCache } from './kernel-cache.ts';
import type { BufferSet } from './buffer-sets.ts';
import type { KernelIo, KernelRequest } from './kernels/kernel.ts';
import { addDareNorms, dareNormsBytes, dareNormsRequest, NORM_GROUPS } from './kernels/dare_norms.ts';
import {
  addOverlapCounters,
  emptyOverlapCounts,
  overlapCountGroups,
  overlapCountRequest,
  overlapCountWords,
  type OverlapCounts,
} from './kernels/overlap_count.ts';
import { addSlerpSums, SLERP_SUMS_BYTES, slerpSumsRequest, SUM_GROUPS } from './kernels/slerp.ts';
import { addStatsCounters, statsLayout, statsRequest } from './kernels/stats.ts';
import { emptySlerpSums, type SlerpSums } from '../../methods/slerp.ts';
import { encodeAgents, type AgentParams, type WindowParams } from './layout.ts';
import { statsGroups, type Window } from './plumbing.ts';
import type { Job, PassRunner } from './pass-runner.ts';
import type { Scheduler } from './scheduler.ts';
import type { ScratchBuffers } from './scratch.ts';
import { endOnFirstWindows } from './topk-select.ts';

/** What the per-method passes use of their engine. */
export interface PassContext {
  readonly device: GPUDevice;
  readonly scheduler: Scheduler;
  readonly agents: number;
  /** The per-agent parameters every kernel binds as `agents` (layout.ts AgentParams). */
  readonly agentBuffer: GPUBuffer;
  /** The tie-break's carry between windows, cleared at a merge's first window. */
  readonly carry: GPUBuffer;
  readonly kernels: KernelCache;
  readonly runner: PassRunner;
  /** Buffers a method's passes keep beside the buffer sets (scratch.ts). */
  readonly scratch: ScratchBuffers;
}

/**
 * A pass whose kernel writes a partial result per window into a buffer set's `counters` or `norms`
 * (BufferSets sizes them for the largest of these: statsLayout, dareNormsBytes), which is read back
 * and added up in window order.
 */
export interface ReducePass<R> {
  label: string;
  kernel: KernelRequest;
  source: 'counters' | 'norms';
  /** Bytes of each window's result, from the start of `source`. */
  bytes: number;
  /** The kernel adds into `source`: its first `bytes` are cleared before each window. */
  clear: boolean;
  /** Workgroups for a window of `count` elements. */
  groups(count: number): number;
  /** The pass's own window parameters (ε, the seed, ...): the runner adds the window's. */
  params: Partial<WindowParams>;
  /** Per-agent parameters the kernel reads, written before the first window. */
  agents?: readonly AgentParams[];
  /**
   * A pass before a merge: 'merge-first' visits the windows so that it ends on the two the merge
   * starts with, still resident; either way each window a buffer set lets go is kept where the
   * budget has room (WindowPass.keep).
   */
  beforeMerge?: 'in-order' | 'merge-first';
  /** Encoded before the kernel in each window: what writes a buffer the kernel reads (io). */
  prelude?(encoder: GPUCommandEncoder, set: BufferSet, w: Window): void;
  /** The buffers the kernel binds (default: the set's io). */
  io?(set: BufferSet): KernelIo;
  /** The sum so far. */
  result: R;
  /** Adds one window's result (`data`: the read-back bytes, `bytes` of them at its start). */
  add(w: Window, data: Uint8Array): void;
}

/** Runs a ReducePass over the job's windows; `submitted`: called once its last window is submitted. */
export async function runReduce<R>(
  ctx: PassContext,
  job: Job,
  pass: ReducePass<R>,
  submitted?: () => void,
): Promise<R> {
  const kernel = await ctx.kernels.get(pass.kernel);
  if (pass.agents) ctx.scheduler.write(ctx.agentBuffer, 0, encodeAgents(pass.agents));
  const { bytes, source } = pass;
  await ctx.runner.run(job, {
    label: pass.label,
    withBase: true,
    ...(pass.beforeMerge === 'merge-first' ? { order: endOnFirstWindows(job.windows) } : {}),
    ...(pass.beforeMerge ? { keep: true } : {}),
    ...(submitted ? { submitted } : {}),
    groups: (w) => pass.groups(w.count),
    params: () => pass.params,
    encode: (encoder, set, w, d) => {
      if (pass.clear) encoder.clearBuffer(set[source], 0, bytes);
      pass.prelude?.(encoder, set, w);
      kernel.encode(encoder, pass.io?.(set) ?? set.io, d);
    },
    result: { source, bytes: () => bytes, consume: (w, data) => pass.add(w, data) },
  });
  return pass.result;
}

/** The words at the start of a counters read-back. */
function counterWords(data: Uint8Array, words: number): Uint32Array {
  return new Uint32Array(data.buffer, 0, words);
}

/** The statistics of a tensor at ε (kernels/stats.ts): the analysis, and RAM's λ after it. */
export function statsPass(job: Job, agents: number, epsilon: number): ReducePass<TensorStats> {
  const { tensor } = job;
  const words = statsLayout(agents).count;
  const stats = emptyTensorStats(tensor.name, tensor.dtype, tensor.numel, agents);
  return {
    label: 'stats',
    kernel: statsRequest(tensor.dtype, agents),
    source: 'counters',
    bytes: words * 4,
    clear: true,
    groups: statsGroups,
    params: { epsilon },
    result: stats,
    add: (w, data) => addStatsCounters(stats, counterWords(data, words), w.count),
  };
}

/**
 * The pass before a tensor-local RAM+ merge: each agent's changed and unique counts, all its λ reads
 * (the statistics' rules, kernels/overlap_count.ts). It ends on the windows the merge starts with,
 * still resident.
 */
export function overlapCountPass(job: Job, agents: number, epsilon: number): ReducePass<OverlapCounts> {
  const words = overlapCountWords(agents);
  const counts = emptyOverlapCounts(agents);
  return {
    label: 'overlap_count',
    kernel: overlapCountRequest(job.tensor.dtype, agents),
    source: 'counters',
    bytes: words * 4,
    clear: true,
    groups: overlapCountGroups,
    params: { epsilon },
    beforeMerge: 'merge-first',
    result: counts,
    add: (_w, data) => addOverlapCounters(counts, counterWords(data, words)),
  };
}

/**
 * The L1 rule's pass, as every window-local sparsifier shares it: per agent ‖τ‖₁ and ‖m⊙τ‖₁ of the
 * whole tensor, from partial sums each invocation writes (no clear) and the host adds in f64. `mask`
 * is what tells the kernel which entries a method kept: DARE's per-agent keep bounds, or a mask run
 * before each window (a sparsifier's prelude).
 */
export function l1NormsPass(
  job: Job,
  agents: number,
  seed: number,
  label: string,
  kernel: KernelRequest,
  mask: Pick<ReducePass<DareNorms>, 'agents' | 'prelude' | 'io'>,
): ReducePass<DareNorms> {
  const bytes = dareNormsBytes(agents);
  const norms = emptyDareNorms(agents);
  return {
    label,
    kernel,
    source: 'norms',
    bytes,
    clear: false,
    groups: () => NORM_GROUPS,
    params: { nameHash: fnv1a32(job.tensor.name), seed },
    beforeMerge: 'in-order',
    ...mask,
    result: norms,
    add: (_w, data) => addDareNorms(norms, new Float32Array(data.slice(0, bytes).buffer)),
  };
}

/** DARE's L1 rule, with the mask of each agent's keepBelow drawn as the merge draws it. */
export function dareNormsPass(
  job: Job,
  agents: number,
  keepBelow: readonly number[],
  seed: number,
): ReducePass<DareNorms> {
  return l1NormsPass(job, agents, seed, 'dare_norms', dareNormsRequest(job.tensor.dtype, agents), {
    agents: keepBelow.map((k) => ({ keepBelow: k })),
  });
}

/** SLERP's sums of the base and its one agent over the whole tensor (v0², v1², v0·v1), added in f64. */
export function slerpSumsPass(job: Job): ReducePass<SlerpSums> {
  const sums = emptySlerpSums();
  return {
    label: 'slerp_sums',
    kernel: slerpSumsRequest(job.tensor.dtype),
    source: 'norms',
    bytes: SLERP_SUMS_BYTES,
    // Each workgroup writes its own three sums.
    clear: false,
    groups: () => SUM_GROUPS,
    params: {},
    beforeMerge: 'in-order',
    result: sums,
    add: (_w, data) => addSlerpSums(sums, new Float32Array(data.slice(0, SLERP_SUMS_BYTES).buffer)),
  };
}

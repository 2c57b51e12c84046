// The merge pass of a tensor: the merge kernel its method's plan names (a table by `combine`), the
// tie-break kernels that rank ties at a top-k threshold beside it, and the window pass that runs them
// and emits the merged bytes, checked for non-finite values, in window order.

import { NonFiniteTally } from '../../methods/errors.ts';
import type { Combine } from '../../methods/registry/descriptor.ts';
import type { MethodPlan } from '../../methods/registry/index.ts';
import { fnv1a32 } from '../../methods/rng.ts';
import type { MethodParams } from '../../methods/types.ts';
import type { MergeOptions } from '../contract.ts';
import { addBranchCounters } from './kernels/branches.ts';
import type { KernelRequest } from './kernels/kernel.ts';
import { linearRequest } from './kernels/linear.ts';
import {
  FLAG_MODELS,
  FLAG_NON_FINITE,
  FLAG_OVERFLOW,
  flagCount,
  type MergeVariant,
} from './kernels/merge-bindings.ts';
import { ramRequest } from './kernels/ram.ts';
import { slerpRequest } from './kernels/slerp.ts';
import { tiesMergeDispatch, tiesRequest, type TiesOptions } from './kernels/ties.ts';
import { GPU_SPARSIFIERS } from './sparsifiers.ts';
import { spanMarkDispatch, tieMarkDispatch } from './kernels/topk_ties.ts';
import { encodeAgents, type AgentParams } from './layout.ts';
import type { Job } from './pass-runner.ts';
import {
  mergeGroups,
  pad4,
  TIE_BLOCK_PAIRS,
  TIE_BLOCK_WORDS,
  WORKGROUP_SIZE,
  type Dispatch,
} from './plumbing.ts';
import type { MergePrelude, TieBreak } from './pass-types.ts';
import type { PassContext } from './reduce-passes.ts';

export type { MergePrelude, TieBreak } from './pass-types.ts';

/** What decides a merge kernel's variant beside the plan. */
export interface MergeChoice {
  plan: MethodPlan;
  variant: MergeVariant;
  /** Some top-k keeps part of its ties: the kernel reads the tie-break's cutoffs. */
  tieBreak: boolean;
  countBranches: boolean;
  maxPerDimension: number;
}

/** A merge kernel's pipeline and its dispatch for a window's merge dispatch (one invocation per pair). */
export interface MergeKernelChoice {
  request: KernelRequest;
  dispatch(merge: Dispatch): Dispatch;
}

/** Every sum of sparsified τ runs in the TIES kernel, with or without its sign election. */
function tiesFamily(c: MergeChoice): MergeKernelChoice {
  const { plan, countBranches, maxPerDimension } = c;
  // Dense τ: neither dropped nor ranked.
  const sparsify = plan.sparsify ? GPU_SPARSIFIERS[plan.sparsify].ties : { dare: false, topK: false };
  const options: TiesOptions = {
    ...sparsify,
    tieBreak: c.tieBreak,
    consensus: plan.combine === 'ties',
    countBranches,
  };
  return {
    request: tiesRequest(c.variant, options),
    dispatch: (d) => tiesMergeDispatch(d, maxPerDimension, countBranches),
  };
}

const same = (d: Dispatch): Dispatch => d;

/** The merge kernel of each `combine` of a plan (the kernel ids are the plans' `combine`). */
export const MERGE_KERNELS: Readonly<Record<Combine, (c: MergeChoice) => MergeKernelChoice>> = {
  ram: (c) => ({ request: ramRequest(c.variant), dispatch: same }),
  linear: (c) => ({ request: linearRequest(c.variant), dispatch: same }),
  task_arithmetic: tiesFamily,
  ties: tiesFamily,
  slerp: (c) => ({ request: slerpRequest(c.variant), dispatch: same }),
};

/** Tie-count blocks of a merge dispatch: WORKGROUP_SIZE / TIE_BLOCK_PAIRS per workgroup (window.wgsl). */
function tieBlocks(groups: number): number {
  return groups * (WORKGROUP_SIZE / TIE_BLOCK_PAIRS);
}

/** A tensor's merge, once the passes before it have set its agents' parameters (method-passes.ts). */
export interface MergeRun {
  plan: MethodPlan;
  params: MethodParams;
  variant: MergeVariant;
  agents: readonly AgentParams[];
  tieBreak: TieBreak | null;
  /** Encoded before the kernel in each window; the kernel then binds its io. */
  prelude: MergePrelude | null;
  options: MergeOptions;
  /** Called once the last window is submitted (WindowPass.submitted). */
  submitted: () => void;
}

/** Runs the merge pass: every window merged, its flags tallied, its bytes emitted in order. */
export async function runMerge(ctx: PassContext, job: Job, m: MergeRun): Promise<void> {
  const { plan, params, options, tieBreak, prelude } = m;
  const n = ctx.agents;
  const outBytes = job.outBytes;
  const maxPerDimension = ctx.device.limits.maxComputeWorkgroupsPerDimension;
  // Only a sparsified merge counts what it kept; RAM's and the dense merges' branches are the statistics'.
  const branches = plan.sparsify !== undefined ? options.branches : undefined;
  const choice = MERGE_KERNELS[plan.combine]({
    plan,
    variant: m.variant,
    tieBreak: tieBreak !== null,
    countBranches: branches !== undefined,
    maxPerDimension,
  });
  const kernel = await ctx.kernels.get(choice.request);
  const tieRows = job.tieRows * n;
  ctx.scheduler.write(ctx.agentBuffer, 0, encodeAgents(m.agents));
  const nameHash = fnv1a32(job.tensor.name);
  const progressBytes = (n + 1) * job.inBytes;
  const tally = new NonFiniteTally(n + 1);
  const runner = ctx.runner;
  await runner.run(job, {
    label: params.method,
    withBase: plan.combine !== 'linear',
    groups: (w) => mergeGroups(w.count),
    params: () => ({
      epsilon: params.epsilon,
      scale: params.lambda,
      nameHash,
      seed: params.seed,
      normalize: params.normalize,
    }),
    encode: (encoder, set, w, d) => {
      if (runner.poison) ctx.scheduler.write(set.output, 0, runner.poison, pad4(w.count * outBytes));
      if (tieBreak) {
        if (w.index === 0) encoder.clearBuffer(ctx.carry);
        encoder.clearBuffer(set.tieCounts, 0, tieRows * tieBlocks(d.groups) * TIE_BLOCK_WORDS * 4);
        tieBreak.whole?.encode(encoder, set.io, tieMarkDispatch(d, maxPerDimension));
        for (const span of tieBreak.spans)
          if (span.first >= w.start && span.first < w.start + w.count)
            span.kernel.encode(encoder, set.io, spanMarkDispatch(span.end - span.first, maxPerDimension));
        tieBreak.scan.encode(encoder, set.io, { x: 1, y: 1, groups: 1 });
      }
      encoder.clearBuffer(set.flags);
      if (branches) encoder.clearBuffer(runner.branchSet(set).counters);
      prelude?.encode(encoder, set, w);
      kernel.encode(encoder, prelude ? prelude.io(set) : runner.mergeIo(set), choice.dispatch(d));
    },
    result: {
      source: 'output',
      flags: true,
      branches: branches !== undefined,
      bytes: (w) => pad4(w.count * outBytes),
      consume: async (w, bytes, counters) => {
        const flags = new Uint32Array(bytes.buffer, pad4(w.count * outBytes), flagCount(n));
        tally.add(flags[FLAG_NON_FINITE]!, flags[FLAG_OVERFLOW]!, flags.subarray(FLAG_MODELS));
        if (branches && counters) addBranchCounters(branches, counters, n, w.count);
        // After a bad window nothing more is emitted; the rest is only counted for the error.
        if (!tally.bad) await options.emit(bytes.subarray(0, w.count * outBytes));
        options.onProgress?.((w.start + w.count) * progressBytes);
      },
    },
    submitted: m.submitted,
  });
  tally.throwIfBad();
}

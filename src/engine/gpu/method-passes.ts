// What each merge method needs before its merge kernel runs, as a table: every pass a plan may need
// (DARE's norms, RAM+'s tensor-local overlap counts, the top-k selects of TIES and Model Breadcrumbs
// with their tie-break), when a plan needs it, and which of the agents' parameters it fills in. The
// merge then runs the kernel the plan's `combine` names (merge-pass.ts). How the windows of each
// pass reach the GPU is the pass runner's (pass-runner.ts), never this file's.
//
// Adding a method's passes: a ReducePass (reduce-passes.ts) for a kernel that sums something over
// the tensor, an entry in PASSES_BEFORE_MERGE that says when it runs and what it sets, and the merge
// kernel's entry in MERGE_KERNELS (merge-pass.ts). A method whose windows must hold whole slabs
// says so in its entry's `prepare` (DELLA's rank groups, della-passes.ts).

import { dareScalePlan, l1Scales } from '../../methods/dare-norms.ts';
import { bandCounts } from '../../methods/band.ts';
import { DEFAULT_GAMMA, DEFAULT_SLERP_T } from '../../methods/params.ts';
import type { MethodPlan } from '../../methods/registry/index.ts';
import { dareKeepBelow, dareScale } from '../../methods/rng.ts';
import { topKCount } from '../../methods/select.ts';
import { slerpAgentsProblem, slerpCoefficients } from '../../methods/slerp.ts';
import { localLambdas } from '../../methods/stats.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import type { MethodParams } from '../../methods/types.ts';
import { dellaMask, dellaWindows } from './della-passes.ts';
import type { MergeVariant } from './kernels/merge-bindings.ts';
import type { AgentParams } from './layout.ts';
import { tieBreakKernels, type MergePrelude, type TieBreak } from './merge-pass.ts';
import type { Job, WholeSlabs } from './pass-runner.ts';
import {
  dareNormsPass,
  overlapCountPass,
  runReduce,
  slerpSumsPass,
  type PassContext,
} from './reduce-passes.ts';
import type { SelectedTopK, TopKSelect } from './topk-select.ts';

/** The engine's side of the passes before a merge: the pass context and the top-k select. */
export interface MethodContext extends PassContext {
  readonly topK: TopKSelect<Job>;
}

/** A tensor's merge as the passes before it leave it: what the merge pass reads (MergeRun). */
export interface MergeSetup {
  readonly job: Job;
  readonly plan: MethodPlan;
  readonly params: MethodParams;
  readonly variant: MergeVariant;
  /** Each agent's parameters: weight and λ, then what each pass before the merge fills in. */
  readonly agents: AgentParams[];
  /** The tie-break's kernels, where some top-k keeps part of its ties. */
  tieBreak: TieBreak | null;
  /** What runs in each merge window before the kernel (DELLA's mask). */
  prelude: MergePrelude | null;
}

export interface PassBeforeMerge {
  name: string;
  /** Whether a method's merge runs it. */
  needed(plan: MethodPlan): boolean;
  /**
   * Before the tensor's windows are made: checks the parameters, and says where the windows must
   * hold whole slabs.
   */
  prepare?(ctx: PassContext, tensor: TensorInput, params: MethodParams): WholeSlabs | undefined;
  /** Runs its window passes over the tensor and fills in its part of `setup`. */
  run(ctx: MethodContext, setup: MergeSetup): Promise<void>;
}

/**
 * A top-k's ties to keep and the elements [first, end) they are marked in: with a span (the one chunk
 * that holds its first tie not kept) those counted from the span's first element; else everywhere, and
 * first and end are undefined (the tie-break marks whole windows for such a row).
 */
function tieMarks(
  s: SelectedTopK,
  spans: boolean,
): [toKeep: number, first: number | undefined, end: number | undefined] {
  return s.span && spans
    ? [s.tiesToKeep - s.span.before, s.span.first, s.span.end]
    : [s.tiesToKeep, undefined, undefined];
}

/**
 * The top-k counts of a ranked sparsification: per agent its kept top-k (TIES); for Model
 * Breadcrumbs then, at N + t, agent t's outliers' top-k.
 */
function topKCounts(plan: MethodPlan, params: MethodParams, numel: number): number[] {
  if (plan.sparsify === 'topk') return params.density.map((d) => topKCount(d, numel));
  const bands = params.density.map((d, t) => bandCounts(d, params.gamma?.[t] ?? DEFAULT_GAMMA, numel));
  // One select for both: they share the first digit's histogram pass.
  return [...bands.map((b) => b.outliers + b.kept), ...bands.map((b) => b.outliers)];
}

/** DARE's drop per agent, and its rescale: from density alone, known at once, or by the norms pass. */
const DARE: PassBeforeMerge = {
  name: 'dare_norms',
  needed: (plan) => plan.sparsify === 'dare',
  async run(ctx, s) {
    const { params, job } = s;
    const plan = dareScalePlan(params);
    const keepBelow = params.density.map((d) => dareKeepBelow(d));
    const scales =
      plan === 'pass'
        ? l1Scales(await runReduce(ctx, job, dareNormsPass(job, ctx.agents, keepBelow, params.seed)))
        : plan;
    s.agents.forEach((a, t) => {
      a.keepBelow = keepBelow[t];
      a.invDensity = Math.fround(scales?.[t] ?? dareScale(params.density[t]!));
    });
  },
};

/** RAM+ tensor-local: each agent's λ from this tensor's overlap counts. */
const TENSOR_LAMBDAS: PassBeforeMerge = {
  name: 'overlap_count',
  needed: (plan) => plan.lambdas === 'tensor',
  async run(ctx, s) {
    const { params } = s;
    const counts = await runReduce(ctx, s.job, overlapCountPass(s.job, ctx.agents, params.epsilon));
    const local = localLambdas(counts, params.r, params.alpha, params.epsilon);
    s.agents.forEach((a, t) => (a.lambda = local[t]));
  },
};

/** TIES's and Model Breadcrumbs's thresholds (topk-select.ts), and the tie-break where one needs it. */
const TOP_K: PassBeforeMerge = {
  name: 'topk_select',
  needed: (plan) => plan.sparsify === 'topk' || plan.sparsify === 'band',
  async run(ctx, s) {
    const { tensor } = s.job;
    const band = s.plan.sparsify === 'band';
    const selected = await ctx.topK.select(s.job, topKCounts(s.plan, s.params, tensor.numel));
    // Ties marked in the one chunk that holds the first tie not kept (element indices of the
    // kernels are 32-bit).
    const spans = tensor.numel < 2 ** 32;
    s.agents.forEach((a, t) => {
      const kept = selected[t]!;
      const [tiesToKeep, tieFirst, tieEnd] = tieMarks(kept, spans);
      Object.assign(a, { threshold: kept.threshold, tiesToKeep, tieFirst, tieEnd });
      const outlier = selected[ctx.agents + t];
      if (outlier) {
        const [outliersToDrop, outlierTieFirst, outlierTieEnd] = tieMarks(outlier, spans);
        Object.assign(a, {
          outlierThreshold: outlier.threshold,
          outliersToDrop,
          outlierTieFirst,
          outlierTieEnd,
        });
      }
    });
    // Only a threshold that keeps some but not all of its ties needs their ranks.
    if (selected.some((x) => x.tiesToKeep > 0))
      s.tieBreak = await tieBreakKernels(ctx, tensor.dtype, band, s.agents);
  },
};

/**
 * DELLA's mask (della-passes.ts): windows of whole rank groups, the L1 norms pass where its rule asks,
 * and the mask of each window before the TIES kernel.
 */
const DELLA: PassBeforeMerge = {
  name: 'della_mask',
  needed: (plan) => plan.sparsify === 'della',
  prepare: dellaWindows,
  async run(ctx, s) {
    s.prelude = await dellaMask(ctx, s.job, s.params, s.variant.correctDivision);
  },
};

/** SLERP's coefficients of the base and its one agent, from the sums over the whole tensor. */
const SLERP: PassBeforeMerge = {
  name: 'slerp_sums',
  needed: (plan) => plan.combine === 'slerp',
  prepare(ctx) {
    const problem = slerpAgentsProblem(ctx.agents);
    if (problem) throw new RangeError(problem);
    return undefined;
  },
  async run(ctx, s) {
    const sums = await runReduce(ctx, s.job, slerpSumsPass(s.job));
    const k = slerpCoefficients(sums, s.params.t ?? DEFAULT_SLERP_T);
    s.agents[0] = { lambda: k.base, weight: k.agent };
  },
};

/** Every pass a merge may run before its kernel, in the order they run. */
export const PASSES_BEFORE_MERGE: readonly PassBeforeMerge[] = [DARE, TENSOR_LAMBDAS, TOP_K, DELLA, SLERP];

/** Checks the parameters of the passes the plan needs, and the whole slabs its windows must hold. */
export function preparePasses(
  ctx: PassContext,
  plan: MethodPlan,
  tensor: TensorInput,
  params: MethodParams,
): WholeSlabs | undefined {
  let slabs: WholeSlabs | undefined;
  for (const pass of PASSES_BEFORE_MERGE)
    if (pass.needed(plan)) slabs = pass.prepare?.(ctx, tensor, params) ?? slabs;
  return slabs;
}

/** Runs the passes the setup's plan needs, in table order, each filling in its part. */
export async function runPassesBeforeMerge(ctx: MethodContext, setup: MergeSetup): Promise<void> {
  for (const pass of PASSES_BEFORE_MERGE) if (pass.needed(setup.plan)) await pass.run(ctx, setup);
}

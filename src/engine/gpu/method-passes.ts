// What each merge method needs before its merge kernel runs, as a table: every pass a plan may need
// (its sparsifier's, from GPU_SPARSIFIERS in sparsifiers.ts; RAM+'s tensor-local overlap counts;
// SLERP's sums), when a plan needs it, and which of the agents' parameters it fills in. The merge
// then runs the kernel the plan's `combine` names (merge-pass.ts). How the windows of each pass
// reach the GPU is the pass runner's (pass-runner.ts), never this file's.
//
// Adding a method's passes: a ReducePass (reduce-passes.ts) for a kernel that sums something over
// the tensor, an entry in PASSES_BEFORE_MERGE (or a sparsifier's in GPU_SPARSIFIERS) that says when
// it runs and what it sets, and the merge kernel's entry in MERGE_KERNELS (merge-pass.ts). A pass
// whose windows must hold whole slabs says so in its `prepare`.

import { DEFAULT_SLERP_T } from '../../methods/params.ts';
import type { MethodPlan } from '../../methods/registry/index.ts';
import { slerpAgentsProblem, slerpCoefficients } from '../../methods/slerp.ts';
import { localLambdas } from '../../methods/stats.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import type { MethodParams } from '../../methods/types.ts';
import type { WholeSlabs } from './pass-runner.ts';
import type { MethodContext, MergeSetup, PassBeforeMerge } from './pass-types.ts';
import { overlapCountPass, runReduce, slerpSumsPass, type PassContext } from './reduce-passes.ts';
import { GPU_SPARSIFIERS } from './sparsifiers.ts';

export type { MergeSetup, MethodContext, PassBeforeMerge } from './pass-types.ts';

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
export const PASSES_BEFORE_MERGE: readonly PassBeforeMerge[] = [
  ...[...new Set(Object.values(GPU_SPARSIFIERS).map((s) => s.pass))].map((pass): PassBeforeMerge => ({
    ...pass,
    needed: (plan) => plan.sparsify !== undefined && GPU_SPARSIFIERS[plan.sparsify].pass === pass,
  })),
  TENSOR_LAMBDAS,
  SLERP,
];

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

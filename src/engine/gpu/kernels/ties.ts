// Pipeline module of shaders/ties.wgsl: TIES (after the top-k select of topk_hist / topk_ties /
// topk_scan), DARE-TIES with DARE = 1, Model Breadcrumbs with BAND = 1 (CONSENSUS = 0 without the
// sign election), a sparsifier whose prelude writes per-element factors (its own switch, named by its
// entry in ../sparsifiers.ts), and task arithmetic / DARE-linear with TOP_K = 0 and CONSENSUS = 0
// (CPU reference: tiesCombine, taskArithmeticCombine with the sparsified τ of src/methods/sparsifiers.ts).

import source from '../../../../shaders/ties.wgsl?raw';
import { BRANCH_ROUNDS, BRANCHES_BINDING, BRANCHES_SOURCE } from './branches.ts';
import { splitDispatch, type Dispatch } from '../plumbing.ts';
import { buildKernel, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { MERGE_BINDINGS, mergeConstants, type MergeVariant } from './merge-bindings.ts';
import { FINITE_SOURCE, QUOTIENT_SOURCE, RNG_SOURCE, WINDOW_SOURCES } from './sources.ts';

/**
 * The plan's switches ties.wgsl declares (`override NAME: bool`), in its order: each pipeline sets
 * every one, those a request does not name to false.
 */
const PLAN_SWITCHES = [...source.matchAll(/^override (\w+): bool/gm)].map((m) => m[1]!);

export const TIES_KERNEL: KernelSpec = {
  name: 'ties',
  sources: [...WINDOW_SOURCES, QUOTIENT_SOURCE, FINITE_SOURCE, RNG_SOURCE, BRANCHES_SOURCE, source],
  bindings: [
    ...MERGE_BINDINGS.filter((b) => b.binding < 4),
    { binding: 4, name: 'tie_cutoffs', type: 'read-only-storage' },
    ...MERGE_BINDINGS.filter((b) => b.binding > 4),
    BRANCHES_BINDING,
  ],
  constants: ['IN_DTYPE', 'OUT_DTYPE', 'AGENTS', 'CORRECT_DIVISION', ...PLAN_SWITCHES, 'COUNT_BRANCHES'],
};

export interface TiesOptions {
  /** DARE's random drop instead of the top-k. */
  dare: boolean;
  /**
   * A prelude's per-element factors instead, bound as tie_cutoffs: the switch of ties.wgsl that reads
   * them (a sparsifier's, src/engine/gpu/sparsifiers.ts).
   */
  factors?: string;
  /** Without DARE, the top-k (default); false: the raw τ (task arithmetic, with consensus false). */
  topK?: boolean;
  /** Some threshold keeps part of its ties (cutoffs from topk_ties / topk_scan). */
  tieBreak: boolean;
  /** Model Breadcrumbs: each agent's top outliers dropped from its top-k. */
  band?: boolean;
  /** TIES's sign election; without it the sparsified τ are summed as task arithmetic. */
  consensus?: boolean;
  /** Count the agents summed into each element (kernels/branches.ts). */
  countBranches?: boolean;
}

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function tiesRequest(variant: MergeVariant, options: TiesOptions): KernelRequest {
  if (options.factors !== undefined && !PLAN_SWITCHES.includes(options.factors))
    throw new RangeError(`ties.wgsl declares no switch ${options.factors} for a prelude's factors`);
  return {
    spec: TIES_KERNEL,
    constants: {
      ...mergeConstants(variant),
      ...Object.fromEntries(PLAN_SWITCHES.map((name) => [name, name === options.factors ? 1 : 0])),
      DARE: options.dare ? 1 : 0,
      TOP_K: options.topK === false ? 0 : 1,
      TIE_BREAK: options.tieBreak ? 1 : 0,
      BAND: options.band ? 1 : 0,
      CONSENSUS: options.consensus === false ? 0 : 1,
      COUNT_BRANCHES: options.countBranches ? 1 : 0,
    },
  };
}

export function createTiesKernel(
  device: GPUDevice,
  variant: MergeVariant,
  options: TiesOptions,
): Promise<Kernel> {
  return buildKernel(device, tiesRequest(variant, options));
}

/**
 * The TIES kernel's dispatch for a merge dispatch: each invocation merges two adjacent element pairs
 * (so it loads each agent's parameters once for both), in half the workgroups; one that counts
 * branches, BRANCH_ROUNDS times two pairs (so it adds its counts to the counters once for all).
 */
export function tiesMergeDispatch(merge: Dispatch, maxPerDimension: number, countBranches = false): Dispatch {
  const pairsPerInvocation = countBranches ? 2 * BRANCH_ROUNDS : 2;
  return splitDispatch(Math.ceil(merge.groups / pairsPerInvocation), maxPerDimension);
}

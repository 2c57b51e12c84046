// Pipeline module of shaders/ties.wgsl: TIES (after the top-k select of topk_hist / topk_ties /
// topk_scan), DARE-TIES with DARE = 1, DELLA with DELLA = 1 (after della_mask), Model Breadcrumbs
// with BAND = 1 (CONSENSUS = 0 without the sign election), and task arithmetic / DARE-linear /
// DELLA-linear with TOP_K = 0 and CONSENSUS = 0 (CPU reference: tiesCombine, taskArithmeticCombine
// with denseTaus / dareTaus / bandTaus in src/methods/reference.ts, dellaTaus in src/methods/della.ts).

import source from '../../../../shaders/ties.wgsl?raw';
import { BRANCH_ROUNDS, BRANCHES_BINDING, BRANCHES_SOURCE } from './branches.ts';
import { splitDispatch, type Dispatch } from '../plumbing.ts';
import { buildKernel, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { MERGE_BINDINGS, mergeConstants, type MergeVariant } from './merge-bindings.ts';
import { FINITE_SOURCE, QUOTIENT_SOURCE, RNG_SOURCE, WINDOW_SOURCES } from './sources.ts';

export const TIES_KERNEL: KernelSpec = {
  name: 'ties',
  sources: [...WINDOW_SOURCES, QUOTIENT_SOURCE, FINITE_SOURCE, RNG_SOURCE, BRANCHES_SOURCE, source],
  bindings: [
    ...MERGE_BINDINGS.filter((b) => b.binding < 4),
    { binding: 4, name: 'tie_cutoffs', type: 'read-only-storage' },
    ...MERGE_BINDINGS.filter((b) => b.binding > 4),
    BRANCHES_BINDING,
  ],
  constants: [
    'IN_DTYPE',
    'OUT_DTYPE',
    'AGENTS',
    'CORRECT_DIVISION',
    'DARE',
    'DELLA',
    'TOP_K',
    'TIE_BREAK',
    'BAND',
    'CONSENSUS',
    'COUNT_BRANCHES',
  ],
};

export interface TiesOptions {
  /** DARE's random drop instead of the top-k. */
  dare: boolean;
  /** DELLA's drop instead: the factors of della_mask bound as tie_cutoffs. */
  della?: boolean;
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
  return {
    spec: TIES_KERNEL,
    constants: {
      ...mergeConstants(variant),
      DARE: options.dare ? 1 : 0,
      DELLA: options.della ? 1 : 0,
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

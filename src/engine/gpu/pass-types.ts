// The shapes the passes before a merge and the merge pass share: what a pass before the merge is,
// the setup it fills in, and what the merge then runs beside its kernel (a tie-break, a prelude).
// Types only, so the tables of passes (method-passes.ts, sparsifiers.ts) and the merge pass
// (merge-pass.ts) can all name them without importing one another.

import type { MethodPlan } from '../../methods/registry/index.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import type { MethodParams } from '../../methods/types.ts';
import type { BufferSet } from './buffer-sets.ts';
import type { Kernel, KernelIo } from './kernels/kernel.ts';
import type { MergeVariant } from './kernels/merge-bindings.ts';
import type { AgentParams } from './layout.ts';
import type { Job, WholeSlabs } from './pass-runner.ts';
import type { Window } from './plumbing.ts';
import type { PassContext } from './reduce-passes.ts';
import type { TopKSelect } from './topk-select.ts';

/** The kernels of a merge's tie-break (tieBreakKernels). */
export interface TieBreak {
  whole: Kernel | null;
  spans: { first: number; end: number; kernel: Kernel }[];
  scan: Kernel;
}

/**
 * What runs in each merge window before its kernel (a sparsifier's mask, sparsifiers.ts), and the buffers
 * the kernel then binds.
 */
export interface MergePrelude {
  encode(encoder: GPUCommandEncoder, set: BufferSet, w: Window): void;
  io(set: BufferSet): KernelIo;
}

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
  /** What runs in each merge window before the kernel (a sparsifier's mask). */
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

// DELLA's passes before its merge (mergekit `della`, MagPrune): windows of whole rank groups; per
// window, before the merge kernel, della_mask ranks each group's |τ| by a bitonic sort in a scratch
// region and writes per-element factors (0 where dropped), which the TIES kernel reads with DELLA = 1
// in place of the tie-break's cutoffs; with mergekit's L1 rule, a norms pass (mask, then della_norms)
// over the whole tensor first finds each agent's factor. CPU reference: src/methods/della.ts.

import { l1Scales, type DareNorms } from '../../methods/dare-norms.ts';
import { checkDella, DEFAULT_DELLA_EPSILON, dellaGroups, dellaThreshold } from '../../methods/della.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import type { MethodParams } from '../../methods/types.ts';
import type { BufferSet } from './buffer-sets.ts';
import {
  DELLA_AGENT_WORDS,
  DELLA_SPEC_HEADER_WORDS,
  dellaMaskGroups,
  dellaMaskRequest,
  dellaSortBytes,
  encodeDellaSpec,
  pow2AtLeast,
} from './kernels/della_mask.ts';
import { dellaNormsRequest } from './kernels/della_norms.ts';
import type { KernelIo } from './kernels/kernel.ts';
import type { MergePrelude } from './pass-types.ts';
import type { Job, WholeSlabs } from './pass-runner.ts';
import { splitDispatch } from './plumbing.ts';
import { l1NormsPass, runReduce, type PassContext, type ReducePass } from './reduce-passes.ts';

/** The switch of ties.wgsl that multiplies each agent's τ by della_mask's factors (tie_cutoffs). */
export const DELLA_TIES_SWITCH = 'DELLA';

/** The mask as a merge's prelude, and the buffers its own kernel binds (which della_norms reads). */
interface DellaMask extends MergePrelude {
  maskIo(set: BufferSet): KernelIo;
}

/**
 * DELLA's windows: whole slabs (its rank groups), each element costing the sort scratch (agents ×
 * groups × their power-of-two length, 8 bytes each). Checks density ± ε first, naming the agent.
 */
export function dellaWindows(ctx: PassContext, tensor: TensorInput, params: MethodParams): WholeSlabs {
  checkDella(params.density, params.dellaEpsilon ?? []);
  const groups = dellaGroups(tensor.shape, tensor.numel);
  const length = Math.max(1, groups.length);
  const perElement = (ctx.agents * 8 * pow2AtLeast(length)) / length;
  if (groups.slab * perElement > ctx.device.limits.maxStorageBufferBindingSize)
    throw new RangeError(
      `${tensor.name}: DELLA's rank groups of ${groups.length} elements need more GPU scratch than one binding holds: merge with the CPU engine (--cpu)`,
    );
  return { slab: groups.slab, scratchBytesPerElement: perElement };
}

/**
 * The mask of a tensor's windows: its scratch buffers and DellaSpec written (kept entries scaled by
 * 1/p, or by each agent's factor: l1 by the norms pass, none 1, or the recipe's dareScales), and what
 * encodes the mask of each window before its merge kernel.
 */
export async function dellaMask(
  ctx: PassContext,
  job: Job,
  params: MethodParams,
  correctDivision: boolean,
): Promise<MergePrelude> {
  const n = ctx.agents;
  const { tensor } = job;
  const groups = dellaGroups(tensor.shape, tensor.numel);
  // No window is larger than the first.
  const size = job.windows[0]?.count ?? 0;
  const storage = GPUBufferUsage.STORAGE;
  const sort = ctx.scratch.ensure('della.sort', dellaSortBytes(size, groups, n), storage);
  const factors = ctx.scratch.ensure('della.factors', n * size * 4, storage);
  const specBytes = (DELLA_SPEC_HEADER_WORDS + DELLA_AGENT_WORDS * n) * 4;
  const spec = ctx.scratch.ensure('della.spec', specBytes, storage | GPUBufferUsage.COPY_DST);
  const kernel = await ctx.kernels.get(dellaMaskRequest(tensor.dtype, n, correctDivision));
  const ios = new WeakMap<KernelIo, { mask: KernelIo; merge: KernelIo }>();
  const io = (set: BufferSet): { mask: KernelIo; merge: KernelIo } => {
    let found = ios.get(set.io);
    if (!found) {
      found = {
        mask: { ...set.io, della_sort: sort, della_factors: factors, della: spec },
        merge: { ...ctx.runner.mergeIo(set), tie_cutoffs: factors },
      };
      ios.set(set.io, found);
    }
    return found;
  };
  const max = ctx.device.limits.maxComputeWorkgroupsPerDimension;
  const mask: DellaMask = {
    encode: (encoder, set, w) =>
      kernel.encode(encoder, io(set).mask, splitDispatch(dellaMaskGroups(w.count, groups.length, n), max)),
    io: (set) => io(set).merge,
    maskIo: (set) => io(set).mask,
  };
  const thresholds = params.density.map((d, t) =>
    dellaThreshold(d, params.dellaEpsilon?.[t] ?? DEFAULT_DELLA_EPSILON),
  );
  const writeSpec = (scales: readonly number[] | null): void =>
    ctx.scheduler.write(
      spec,
      0,
      new Uint8Array(
        encodeDellaSpec(
          groups,
          thresholds.map((threshold, t) => ({ threshold, inverseP: !scales, factor: scales?.[t] ?? 1 })),
        ),
      ),
    );
  const rescale = params.rescale ?? 'density';
  let scales: number[] | null = params.dareScales ?? null;
  if (!scales && rescale === 'none') scales = params.density.map(() => 1);
  if (!scales && rescale === 'l1') {
    // Factors of 1 mark the kept entries for the norms pass.
    writeSpec(params.density.map(() => 1));
    scales = l1Scales(await runReduce(ctx, job, dellaNormsPass(job, n, params.seed, mask)));
  }
  writeSpec(scales && scales.map((f) => Math.fround(f)));
  return mask;
}

/** DELLA's L1 rule: the shared L1 pass, each window's mask run first and its factors read. */
function dellaNormsPass(job: Job, agents: number, seed: number, mask: DellaMask): ReducePass<DareNorms> {
  return l1NormsPass(job, agents, seed, 'della_norms', dellaNormsRequest(job.tensor.dtype, agents), {
    prelude: (encoder, set, w) => mask.encode(encoder, set, w),
    io: (set) => mask.maskIo(set),
  });
}

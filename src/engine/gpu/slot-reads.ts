// One window of a tensor read from the files into staging memory, a slot per model: the read that
// the pass runner's uploads (pass-runner.ts) and the tensor view's mask pass (driver/tensor-view.ts)
// share, and the parameters every windowed kernel reads (shaders/common/layout.wgsl).

import { dtypeBits } from '../../format/dtype.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import type { WindowParams } from './layout.ts';
import type { Dispatch, Window } from './plumbing.ts';

/**
 * Reads elements [start, start + count) of each model in `slots` (0 = base) into its slot of
 * `staging`, model k's at byte k · slotBytes, and zero-fills each slot from the bytes read up to
 * `fillTo` bytes into it (the last partial word, or the whole slot). Every read has settled when it
 * returns or throws, so none is still writing into `staging`; it throws the first failed slot's error.
 */
export async function readSlots(
  tensor: TensorInput,
  slots: readonly number[],
  start: number,
  count: number,
  staging: Uint8Array,
  slotBytes: number,
  fillTo: number,
): Promise<void> {
  const used = (count * dtypeBits(tensor.dtype)) / 8;
  const reads = await Promise.allSettled(
    slots.map((k) => tensor.read(k, start, count, staging.subarray(k * slotBytes, k * slotBytes + used))),
  );
  for (const k of slots) staging.fill(0, k * slotBytes + used, k * slotBytes + fillTo);
  const failed = reads.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * The parameters of window w whose slots are slotBytes apart, dispatched as d; `offset`: the
 * element of the tensor its element 0 is (the tensor view's windows start at its first viewed row).
 */
export function windowParams(w: Window, slotBytes: number, d: Dispatch, offset = 0): WindowParams {
  return {
    count: w.count,
    slotWords: slotBytes / 4,
    start: offset + w.start,
    groupsX: d.x,
    groups: d.groups,
  };
}

// Host side of shaders/common/branches.wgsl: the counters' layout, and their exact sum into a tensor's
// branch counts (CPU reference: accumulateBranches in src/methods/reference.ts).

import branchesSource from '../../../../shaders/common/branches.wgsl?raw';
import type { BranchCounts } from '../../../methods/tensors.ts';
import { at } from '../../../io/checked.ts';
import type { BindingSpec } from './kernel.ts';

export const BRANCHES_SOURCE: string = branchesSource;

export const BRANCHES_BINDING: BindingSpec = { binding: 6, name: 'branches', type: 'storage' };

/** Copies of the counters (BRANCH_SLOTS in branches.wgsl). */
export const BRANCH_SLOTS = 8;

/** Rounds of two element pairs each invocation of a counting merge runs (BRANCH_ROUNDS in branches.wgsl). */
export const BRANCH_ROUNDS = 32;

/** Words per copy: 2N counters rounded up to 16 (branch_stride in branches.wgsl). */
export function branchStride(agents: number): number {
  return (2 * agents + 15) & ~15;
}

export function branchWords(agents: number): number {
  return BRANCH_SLOTS * branchStride(agents);
}

/**
 * Adds one window's counters into `into`: per copy, the elements of each class c = 2..N (word c − 2),
 * those of agent t alone (word N − 1 + t), and the sign conflicts (word 2N − 1). Elements with no
 * agent summed are not counted in the kernel: counts[0] is the window's other elements.
 */
export function addBranchCounters(
  into: BranchCounts,
  words: Uint32Array,
  agents: number,
  count: number,
): void {
  const stride = branchStride(agents);
  const total = new Array<number>(2 * agents).fill(0);
  for (let slot = 0; slot < BRANCH_SLOTS; slot++)
    for (let k = 0; k < 2 * agents; k++)
      total[k] = at(total, k) + at(words, slot * stride + k, 'branch counters');
  const add = (list: number[], i: number, n: number): void => {
    list[i] = at(list, i, 'branch counts') + n;
  };
  let counted = 0;
  for (let k = 0; k < 2 * agents - 1; k++) {
    const n = at(total, k);
    counted += n;
    if (k < agents - 1) add(into.counts, k + 2, n);
    else {
      add(into.unique, k - agents + 1, n);
      add(into.counts, 1, n);
    }
  }
  into.signConflicts += at(total, 2 * agents - 1);
  add(into.counts, 0, count - counted);
}

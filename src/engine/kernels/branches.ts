// Host side of shaders/common/branches.wgsl: the counters' layout, and their exact sum into a tensor's
// branch counts (CPU reference: accumulateBranches in src/methods/reference.ts).

import branchesSource from '../../../shaders/common/branches.wgsl?raw';
import type { BranchCounts } from '../../methods/merge-types.ts';
import { at } from '../../io/checked.ts';
import type { BindingSpec } from './kernel.ts';

export const BRANCHES_SOURCE: string = branchesSource;

export const BRANCHES_BINDING: BindingSpec = { binding: 6, name: 'branches', type: 'storage' };

/** Copies of the counters (BRANCH_SLOTS in branches.wgsl). */
export const BRANCH_SLOTS = 8;

/** Words per copy: 2N + 1 rounded up to 16 (branch_stride in branches.wgsl). */
export function branchStride(agents: number): number {
  return (2 * agents + 16) & ~15;
}

export function branchWords(agents: number): number {
  return BRANCH_SLOTS * branchStride(agents);
}

/**
 * Adds one window's counters into `into`. counts[1] is the sum of the unique counts and counts[0] the
 * window's other elements, which the kernel does not count.
 */
export function addBranchCounters(
  into: BranchCounts,
  words: Uint32Array,
  agents: number,
  count: number,
): void {
  const stride = branchStride(agents);
  const add = (list: number[], i: number, n: number): void => {
    list[i] = at(list, i, 'branch counts') + n;
  };
  let counted = 0;
  for (let slot = 0; slot < BRANCH_SLOTS; slot++) {
    const word = (i: number): number => at(words, slot * stride + i, 'branch counters');
    into.signConflicts += word(0);
    for (let c = 2; c <= agents; c++) {
      add(into.counts, c, word(c));
      counted += word(c);
    }
    for (let t = 0; t < agents; t++) {
      const n = word(agents + 1 + t);
      add(into.unique, t, n);
      add(into.counts, 1, n);
      counted += n;
    }
  }
  add(into.counts, 0, count - counted);
}

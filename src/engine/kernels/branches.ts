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

/** Codes of one element: 2 · class + conflict, 2N + 1 classes (branch_codes in branches.wgsl). */
export function branchCodes(agents: number): number {
  return 4 * agents + 2;
}

/** Words per copy: one per pair of codes, rounded up to 16 (branch_stride in branches.wgsl). */
export function branchStride(agents: number): number {
  return (branchCodes(agents) ** 2 + 15) & ~15;
}

export function branchWords(agents: number): number {
  return BRANCH_SLOTS * branchStride(agents);
}

/**
 * Adds one window's counters into `into`: each counter is a number of pairs whose two elements had
 * these codes. Class 0 is not counted in the kernel: counts[0] is the window's other elements.
 */
export function addBranchCounters(
  into: BranchCounts,
  words: Uint32Array,
  agents: number,
  count: number,
): void {
  const codes = branchCodes(agents);
  const stride = branchStride(agents);
  // Per code, the elements that had it (code 0 left out).
  const perCode = new Array<number>(codes).fill(0);
  for (let slot = 0; slot < BRANCH_SLOTS; slot++)
    for (let x = 0; x < codes; x++)
      for (let y = 0; y < codes; y++) {
        const n = at(words, slot * stride + x * codes + y, 'branch counters');
        if (n === 0) continue;
        perCode[x] = at(perCode, x) + n;
        perCode[y] = at(perCode, y) + n;
      }
  const add = (list: number[], i: number, n: number): void => {
    list[i] = at(list, i, 'branch counts') + n;
  };
  let counted = 0;
  for (let code = 1; code < codes; code++) {
    const n = at(perCode, code);
    if (n === 0) continue;
    const cls = code >> 1;
    if (code & 1) into.signConflicts += n;
    if (cls === 0) continue;
    counted += n;
    if (cls <= agents) add(into.counts, cls, n);
    else {
      add(into.unique, cls - agents - 1, n);
      add(into.counts, 1, n);
    }
  }
  add(into.counts, 0, count - counted);
}

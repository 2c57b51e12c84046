// The tie-mark dispatch beside a merge dispatch: one invocation per tie block of every merge
// workgroup (the merge's tie_blocks()), in a grid within the per-dimension limit.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { splitDispatch, TIE_BLOCK_PAIRS, WORKGROUP_SIZE } from '../plumbing.ts';
import { tieMarkDispatch } from './topk_ties.ts';

describe('tieMarkDispatch', () => {
  it('has an invocation for every tie block of the merge, with less than a workgroup row to spare', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4_000_000 }),
        fc.integer({ min: 64, max: 70_000 }),
        (groups, max) => {
          fc.pre(groups <= max * max);
          const merge = splitDispatch(groups, max);
          const d = tieMarkDispatch(merge, max);
          const blocks = groups * (WORKGROUP_SIZE / TIE_BLOCK_PAIRS);
          expect(d.x).toBeLessThanOrEqual(max);
          expect(d.y).toBeLessThanOrEqual(max);
          expect(d.x * d.y * WORKGROUP_SIZE).toBeGreaterThanOrEqual(blocks);
          expect(d.groups * WORKGROUP_SIZE - blocks).toBeLessThan(WORKGROUP_SIZE);
          expect(d.x * d.y - d.groups).toBeLessThan(d.x);
        },
      ),
    );
  });
});

import { describe, expect, it } from 'vitest';
import { METHOD_LIST } from '../../methods/registry/index.ts';
import { MERGE_KERNELS, type MergeChoice } from './merge-pass.ts';
import { PASSES_BEFORE_MERGE } from './method-passes.ts';
import { DTYPE_CODE } from './kernels/kernel.ts';

/**
 * The GPU engine's passes per method, written out: a method added to the registry adds its line
 * here, with the passes its plan needs before the merge kernel.
 */
const PASSES: Record<string, string[]> = {
  ram: [],
  ramplus: [],
  ramplus_soft: [],
  ramplus_tl: ['overlap_count'],
  linear: [],
  task_arithmetic: [],
  ties: ['topk_select'],
  dare_linear: ['dare_norms'],
  dare_ties: ['dare_norms'],
  breadcrumbs: ['topk_select'],
  breadcrumbs_ties: ['topk_select'],
  della: ['della_mask'],
  della_linear: ['della_mask'],
  slerp: ['slerp_sums'],
};

/** The merge kernel and the TIES kernel's plan constants (DARE, TOP_K, BAND, CONSENSUS) per method. */
const KERNELS: Record<string, [name: string, ties?: [number, number, number, number]]> = {
  ram: ['ram'],
  ramplus: ['ram'],
  ramplus_soft: ['ram'],
  ramplus_tl: ['ram'],
  linear: ['linear'],
  task_arithmetic: ['ties', [0, 0, 0, 0]],
  ties: ['ties', [0, 1, 0, 1]],
  dare_linear: ['ties', [1, 0, 0, 0]],
  dare_ties: ['ties', [1, 0, 0, 1]],
  breadcrumbs: ['ties', [0, 1, 1, 0]],
  breadcrumbs_ties: ['ties', [0, 1, 1, 1]],
  della: ['ties', [0, 0, 0, 1]],
  della_linear: ['ties', [0, 0, 0, 0]],
  slerp: ['slerp'],
};

/** The merge kernels without a quotient to correct. */
const NO_DIVISION = new Set(['slerp']);

/** The methods whose TIES kernel reads DELLA's factors (DELLA = 1). */
const DELLA_KERNEL = new Set(['della', 'della_linear']);

describe('PASSES_BEFORE_MERGE', () => {
  it('runs for each method exactly the passes its plan needs, in table order', () => {
    for (const m of METHOD_LIST) {
      const expected = PASSES[m.name];
      expect(expected, `${m.name} has no line in PASSES`).toBeDefined();
      expect(
        PASSES_BEFORE_MERGE.filter((p) => p.needed(m.plan)).map((p) => p.name),
        m.name,
      ).toEqual(expected);
    }
  });
});

describe('MERGE_KERNELS', () => {
  it('picks for each method its kernel and the constants its plan and the choice set', () => {
    const variant = { inDtype: 'BF16', outDtype: 'F16', agents: 3, correctDivision: true } as const;
    for (const m of METHOD_LIST) {
      const [name, ties] = KERNELS[m.name] ?? [];
      expect(name, `${m.name} has no line in KERNELS`).toBeDefined();
      for (const tieBreak of [false, true])
        for (const countBranches of [false, true]) {
          const choice: MergeChoice = {
            plan: m.plan,
            variant,
            tieBreak,
            countBranches,
            maxPerDimension: 65535,
          };
          const { request, dispatch } = MERGE_KERNELS[m.plan.combine](choice);
          expect(request.spec.name, m.name).toBe(name);
          // SLERP divides nothing (its coefficients come from the host): no CORRECT_DIVISION.
          const divides = !NO_DIVISION.has(m.name);
          expect(request.constants, m.name).toMatchObject({
            IN_DTYPE: DTYPE_CODE.BF16,
            OUT_DTYPE: DTYPE_CODE.F16,
            AGENTS: 3,
            ...(divides ? { CORRECT_DIVISION: 1 } : {}),
          });
          expect('CORRECT_DIVISION' in request.constants, m.name).toBe(divides);
          const merge = { x: 1000, y: 1, groups: 1000 };
          if (!ties) {
            expect(dispatch(merge)).toEqual(merge);
            continue;
          }
          const [dare, topK, band, consensus] = ties;
          expect(request.constants, m.name).toMatchObject({
            DARE: dare,
            TOP_K: topK,
            BAND: band,
            CONSENSUS: consensus,
            DELLA: DELLA_KERNEL.has(m.name) ? 1 : 0,
            TIE_BREAK: tieBreak ? 1 : 0,
            COUNT_BRANCHES: countBranches ? 1 : 0,
          });
          // Two pairs per invocation; a counting one, BRANCH_ROUNDS (32) times two.
          expect(dispatch(merge).groups, m.name).toBe(countBranches ? Math.ceil(1000 / 64) : 500);
        }
    }
  });
});

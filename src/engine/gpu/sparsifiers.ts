// The GPU's side of each sparsifier (src/methods/sparsifiers.ts has the CPU's), keyed by a plan's
// `sparsify`: the pass that runs before the merge kernel (and which of the agents' parameters it
// fills in), the switches of the TIES kernel that then sparsify τ, and the tie-count rows it ranks
// ties in. method-passes.ts and merge-pass.ts read it; neither names a sparsifier.

import { dareScalePlan, l1Scales } from '../../methods/dare-norms.ts';
import { bandCounts } from '../../methods/band.ts';
import { DEFAULT_GAMMA } from '../../methods/params.ts';
import type { MethodPlan } from '../../methods/registry/index.ts';
import { dareKeepBelow, dareScale } from '../../methods/rng.ts';
import { topKCount } from '../../methods/select.ts';
import type { FloatDtype } from '../../format/dtype.ts';
import type { Sparsify } from '../../methods/sparsifiers.ts';
import type { MethodParams } from '../../methods/types.ts';
import { DELLA_TIES_SWITCH, dellaMask, dellaWindows } from './della-passes.ts';
import type { TiesOptions } from './kernels/ties.ts';
import { topKScanRequest } from './kernels/topk_scan.ts';
import { topKTiesRequest } from './kernels/topk_ties.ts';
import type { AgentParams } from './layout.ts';
import type { PassBeforeMerge, TieBreak } from './pass-types.ts';
import { dareNormsPass, runReduce, type PassContext } from './reduce-passes.ts';
import type { SelectedTopK } from './topk-select.ts';

/** A pass before the merge, without `needed`: it runs where the plan's sparsify names its entry. */
export type SparsifierPass = Omit<PassBeforeMerge, 'needed'>;

export interface GpuSparsifier {
  pass: SparsifierPass;
  /** The TIES kernel's switches for it (beside the plan's consensus, the tie-break and counting). */
  ties: Pick<TiesOptions, 'dare' | 'topK' | 'band' | 'factors'>;
}

/**
 * A top-k's ties to keep and the elements [first, end) they are marked in: with a span (the one chunk
 * that holds its first tie not kept) those counted from the span's first element; else everywhere, and
 * first and end are undefined (the tie-break marks whole windows for such a row).
 */
function tieMarks(
  s: SelectedTopK,
  spans: boolean,
): [toKeep: number, first: number | undefined, end: number | undefined] {
  return s.span && spans
    ? [s.tiesToKeep - s.span.before, s.span.first, s.span.end]
    : [s.tiesToKeep, undefined, undefined];
}

/**
 * The top-k counts of a ranked sparsification: per agent its kept top-k (TIES); for Model
 * Breadcrumbs then, at N + t, agent t's outliers' top-k.
 */
function topKCounts(plan: MethodPlan, params: MethodParams, numel: number): number[] {
  if (plan.sparsify === 'topk') return params.density.map((d) => topKCount(d, numel));
  const bands = params.density.map((d, t) => bandCounts(d, params.gamma?.[t] ?? DEFAULT_GAMMA, numel));
  // One select for both: they share the first digit's histogram pass.
  return [...bands.map((b) => b.outliers + b.kept), ...bands.map((b) => b.outliers)];
}

/** DARE's drop per agent, and its rescale: from density alone, known at once, or by the norms pass. */
const DARE_NORMS: SparsifierPass = {
  name: 'dare_norms',
  async run(ctx, s) {
    const { params, job } = s;
    const plan = dareScalePlan(params);
    const keepBelow = params.density.map((d) => dareKeepBelow(d));
    const scales =
      plan === 'pass'
        ? l1Scales(await runReduce(ctx, job, dareNormsPass(job, ctx.agents, keepBelow, params.seed)))
        : plan;
    s.agents.forEach((a, t) => {
      a.keepBelow = keepBelow[t];
      a.invDensity = Math.fround(scales?.[t] ?? dareScale(params.density[t]!));
    });
  },
};

/**
 * The tie-break's kernels: the marks over whole windows for the agents without a span (and every
 * Model Breadcrumbs row), a marks dispatch per span, and the scan that finds each row's cutoff.
 */
export async function tieBreakKernels(
  ctx: PassContext,
  dtype: FloatDtype,
  band: boolean,
  agents: readonly AgentParams[],
): Promise<TieBreak> {
  const n = ctx.agents;
  // Every tie row that keeps part of its ties: agent t's kept top-k at row t, its outliers' at N + t.
  const rows = agents.flatMap((a, t) => [
    { row: t, keep: a.tiesToKeep ?? 0, first: a.tieFirst, end: a.tieEnd },
    ...(band
      ? [{ row: n + t, keep: a.outliersToDrop ?? 0, first: a.outlierTieFirst, end: a.outlierTieEnd }]
      : []),
  ]);
  const partial = rows.filter((r) => r.keep > 0);
  const whole = partial.some((r) => r.first === undefined)
    ? await ctx.kernels.get(topKTiesRequest(dtype, n, band))
    : null;
  const spans: TieBreak['spans'] = [];
  for (const r of partial)
    if (r.first !== undefined && r.end !== undefined)
      spans.push({
        first: r.first,
        end: r.end,
        kernel: await ctx.kernels.get(topKTiesRequest(dtype, n, band, r.row)),
      });
  const scan = await ctx.kernels.get(topKScanRequest(n, band));
  return { whole, spans, scan };
}

/** TIES's and Model Breadcrumbs's thresholds (topk-select.ts), and the tie-break where one needs it. */
const TOP_K_SELECT: SparsifierPass = {
  name: 'topk_select',
  async run(ctx, s) {
    const { tensor } = s.job;
    const band = s.plan.sparsify === 'band';
    const selected = await ctx.topK.select(s.job, topKCounts(s.plan, s.params, tensor.numel));
    // Ties marked in the one chunk that holds the first tie not kept (element indices of the
    // kernels are 32-bit).
    const spans = tensor.numel < 2 ** 32;
    s.agents.forEach((a, t) => {
      const kept = selected[t]!;
      const [tiesToKeep, tieFirst, tieEnd] = tieMarks(kept, spans);
      Object.assign(a, { threshold: kept.threshold, tiesToKeep, tieFirst, tieEnd });
      const outlier = selected[ctx.agents + t];
      if (outlier) {
        const [outliersToDrop, outlierTieFirst, outlierTieEnd] = tieMarks(outlier, spans);
        Object.assign(a, {
          outlierThreshold: outlier.threshold,
          outliersToDrop,
          outlierTieFirst,
          outlierTieEnd,
        });
      }
    });
    // Only a threshold that keeps some but not all of its ties needs their ranks.
    if (selected.some((x) => x.tiesToKeep > 0))
      s.tieBreak = await tieBreakKernels(ctx, tensor.dtype, band, s.agents);
  },
};

/**
 * MagPrune's mask (della-passes.ts): windows of whole rank groups, the L1 norms pass where its rule
 * asks, and the mask of each window before the TIES kernel, which reads its factors.
 */
const MAGPRUNE_MASK: SparsifierPass = {
  name: 'della_mask',
  prepare: dellaWindows,
  async run(ctx, s) {
    s.prelude = await dellaMask(ctx, s.job, s.params, s.variant.correctDivision);
  },
};

export const GPU_SPARSIFIERS: Readonly<Record<Sparsify, GpuSparsifier>> = {
  dare: { pass: DARE_NORMS, ties: { dare: true, topK: false } },
  topk: { pass: TOP_K_SELECT, ties: { dare: false, topK: true } },
  band: { pass: TOP_K_SELECT, ties: { dare: false, topK: true, band: true } },
  della: { pass: MAGPRUNE_MASK, ties: { dare: false, topK: false, factors: DELLA_TIES_SWITCH } },
};

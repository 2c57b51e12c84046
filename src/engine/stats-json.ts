// The statistics as JSON, in the one schema that `merge-studio analyze --json` writes and the
// studio exports: other tools read it, so both sides build it here.
import { ramLambdas } from '../methods/stats.ts';
import type { MethodName } from '../methods/types.ts';
import type { AnalysisResult } from './driver.ts';

/** The λ a merge actually applied, to report instead of the RAM+ preview. */
export interface AppliedLambdas {
  method: MethodName;
  /** Per agent; ignored for `ramplus_tl`, whose λ differs per tensor (written as null). */
  lambdas: readonly number[];
}

/** ρ = +∞ (shared changes, none unique) is written as the string "Infinity": JSON has no infinity. */
function rhoJson(rho: number): number | string {
  return Number.isFinite(rho) ? rho : 'Infinity';
}

/**
 * Without `applied` each model's λ is the RAM+ preview from (r, α) and `lambdaMethod` says
 * "ramplus"; with it, the λ the merge used and its method.
 */
export function statsJson(
  analysis: AnalysisResult,
  paths: string[],
  r: number,
  alpha: number,
  applied?: AppliedLambdas,
): unknown {
  const totals = analysis.totals;
  const lambdas: (number | null)[] = applied
    ? applied.method === 'ramplus_tl'
      ? paths.map(() => null)
      : [...applied.lambdas]
    : ramLambdas(totals, 'ramplus', r, alpha);
  return {
    epsilon: analysis.epsilon,
    lambdaMethod: applied?.method ?? 'ramplus',
    nonFinite: totals.nonFinite,
    base: { nonFinite: totals.nonFiniteModels[0] ?? 0 },
    models: paths.map((path, t) => ({
      path,
      changed: totals.changed[t],
      unique: totals.unique[t],
      shared: totals.shared[t],
      overlap: totals.overlap[t],
      rho: rhoJson(totals.rho[t]!),
      lambda: lambdas[t],
      nonFinite: totals.nonFiniteModels[t + 1] ?? 0,
    })),
    tensors: analysis.tensors.map((t) => ({
      name: t.name,
      dtype: t.dtype,
      numel: t.numel,
      counts: t.counts,
      changed: t.changed,
      unique: t.unique,
      signConflicts: t.signConflicts,
      nonFinite: t.nonFinite,
      nonFiniteModels: t.nonFiniteModels,
    })),
  };
}

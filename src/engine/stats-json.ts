// The statistics as JSON, in the one schema that `merge-studio analyze --json` writes and the
// studio exports: other tools read it, so both sides build it here.
import { ramLambdas } from '../methods/stats.ts';
import type { AnalysisResult } from './driver.ts';

export function statsJson(analysis: AnalysisResult, paths: string[], r: number, alpha: number): unknown {
  const lambdas = ramLambdas(analysis.totals, 'ramplus', r, alpha);
  return {
    epsilon: analysis.epsilon,
    models: paths.map((path, t) => ({
      path,
      changed: analysis.totals.changed[t],
      unique: analysis.totals.unique[t],
      shared: analysis.totals.shared[t],
      overlap: analysis.totals.overlap[t],
      rho: Number.isFinite(analysis.totals.rho[t]) ? analysis.totals.rho[t] : null,
      lambda: lambdas[t],
    })),
    tensors: analysis.tensors.map((t) => ({
      name: t.name,
      dtype: t.dtype,
      numel: t.numel,
      counts: t.counts,
      changed: t.changed,
      unique: t.unique,
      signConflicts: t.signConflicts,
    })),
  };
}

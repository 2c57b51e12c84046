// Model Breadcrumbs (mergekit `breadcrumbs`, arXiv 2312.06795): per tensor and agent the largest |τ|
// are dropped as outliers and the next largest kept (bandCounts in src/methods/band.ts), then task
// arithmetic of what is left.
import { defineMethod } from './descriptor.ts';

/** Equal magnitudes at either threshold, and mergekit's slice where gamma·n < 1, said in card and recipe. */
export const BREADCRUMBS_TIE_RULE =
  'Breadcrumbs drops the floor(gamma·n) largest |τ| per tensor and agent and keeps the floor(density·n) ' +
  'next largest (fewer outliers where both exceed n); where entries share a magnitude at either cut, the ' +
  'lowest element indices come first (deterministic; mergekit’s torch.sort may order them otherwise). ' +
  'Where floor(gamma·n) is 0 (gamma 0, or tensors under 1/gamma elements) no outlier is dropped: mergekit’s ' +
  'slice indices[n_bot:-0] then keeps nothing at all, so on such tensors the two differ.';

export const breadcrumbs = defineMethod({
  name: 'breadcrumbs',
  label: 'Breadcrumbs: drop outliers, sum the rest',
  help:
    'Per tensor and agent the floor(gamma·n) largest |τ| dropped and the floor(density·n) next kept, ' +
    'then θ₀ + λ Σ w τ̂ (mergekit’s breadcrumbs).',
  parameters: ['weights', 'density', 'gamma', 'lambda', 'normalize'],
  defaults: { density: 0.9, gamma: 0.01, normalize: false },
  mergekit: { name: 'breadcrumbs', defaults: { normalize: false } },
  plan: { combine: 'task_arithmetic', sparsify: 'band', lambdas: 'one' },
  tieRule: BREADCRUMBS_TIE_RULE,
});

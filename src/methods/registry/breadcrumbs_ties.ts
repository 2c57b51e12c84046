// Model Breadcrumbs with TIES's sign election (mergekit `breadcrumbs_ties`): the outlier-free band of
// breadcrumbs.ts per tensor and agent, then the elected-sign disjoint sum of TIES.
import { BREADCRUMBS_TIE_RULE } from './breadcrumbs.ts';
import { defineMethod } from './descriptor.ts';

export const breadcrumbsTies = defineMethod({
  name: 'breadcrumbs_ties',
  label: 'Breadcrumbs-TIES: drop outliers, vote',
  help:
    'Per tensor and agent the floor(gamma·n) largest |τ| dropped and the floor(density·n) next kept, ' +
    'then sign election and the agreeing agents’ sum (mergekit’s breadcrumbs_ties).',
  parameters: ['weights', 'density', 'gamma', 'lambda', 'normalize'],
  defaults: { density: 0.9, gamma: 0.01, normalize: false },
  mergekit: {
    name: 'breadcrumbs_ties',
    global: ['lambda', 'normalize'],
    perModel: ['weight', 'density', 'gamma'],
    normalize: false,
  },
  plan: { combine: 'ties', sparsify: 'band', lambdas: 'one' },
  tieRule: BREADCRUMBS_TIE_RULE,
});

// Model Breadcrumbs with TIES's sign election (mergekit `breadcrumbs_ties`): the outlier-free band of
// breadcrumbs.ts per tensor and agent, then the elected-sign disjoint sum of TIES.
import { breadcrumbs } from './breadcrumbs.ts';
import { defineMethod } from './descriptor.ts';

export const breadcrumbsTies = defineMethod({
  ...breadcrumbs,
  name: 'breadcrumbs_ties',
  label: 'Breadcrumbs-TIES: drop outliers, vote',
  help:
    'Per tensor and agent the floor(gamma·n) largest |τ| dropped and the floor(density·n) next kept, ' +
    'then sign election and the agreeing agents’ sum (mergekit’s breadcrumbs_ties).',
  mergekit: { ...breadcrumbs.mergekit, name: 'breadcrumbs_ties' },
  plan: { ...breadcrumbs.plan, combine: 'ties' },
});

// DARE-TIES (mergekit `dare_ties`): seeded random drop, rescaled, then TIES's sign election.
import { defineMethod } from './descriptor.ts';

export const dareTies = defineMethod({
  name: 'dare_ties',
  label: 'DARE-TIES',
  help: 'Each τ entry kept with probability density (seeded) and rescaled, then sign election and disjoint mean.',
  parameters: ['weights', 'density', 'lambda', 'normalize', 'seed', 'rescale'],
  defaults: { density: 0.5, normalize: true },
  mergekit: { name: 'dare_ties', defaults: { normalize: false, rescale: 'l1' } },
  plan: { combine: 'ties', sparsify: 'dare', lambdas: 'one' },
});

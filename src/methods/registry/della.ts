// DELLA (mergekit `della`, arXiv 2406.11617): MagPrune's rank-weighted seeded drop, rescaled, then
// TIES's sign election and disjoint sum.
import { defineMethod } from './descriptor.ts';

export const della = defineMethod({
  name: 'della',
  label: 'DELLA: rank-weighted drop, elect sign, disjoint mean',
  help:
    'Per row of τ each entry kept (seeded) with probability from density − dellaEpsilon for the smallest ' +
    '|τ| to density + dellaEpsilon for the largest, rescaled, then sign election and the mean of the ' +
    'agreeing agents, times λ. Rescale: 1/p per entry (the DELLA paper, the default here), l1 (each ' +
    'agent keeps its L1 norm per tensor: mergekit’s default, rescale: true) or none.',
  parameters: ['weights', 'density', 'dellaEpsilon', 'lambda', 'normalize', 'seed', 'rescale'],
  defaults: { density: 0.5, dellaEpsilon: 0.15, normalize: true },
  mergekit: { name: 'della', defaults: { normalize: true, rescale: 'l1' } },
  plan: { combine: 'ties', sparsify: 'della', lambdas: 'one' },
});

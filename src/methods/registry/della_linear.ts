// DELLA-linear (mergekit `della_linear`): MagPrune's rank-weighted seeded drop, rescaled, then task
// arithmetic.
import { defineMethod } from './descriptor.ts';

export const dellaLinear = defineMethod({
  name: 'della_linear',
  label: 'DELLA (linear)',
  help:
    'Per row of τ each entry kept (seeded) with probability from density − dellaEpsilon for the smallest ' +
    '|τ| to density + dellaEpsilon for the largest, rescaled, then task arithmetic (λ Σ w τ̂). Rescale: ' +
    '1/p per entry (the DELLA paper, the default here), l1 (each agent keeps its L1 norm per tensor: ' +
    'mergekit’s default, rescale: true) or none.',
  parameters: ['weights', 'density', 'dellaEpsilon', 'lambda', 'normalize', 'seed', 'rescale'],
  defaults: { density: 0.5, dellaEpsilon: 0.15, normalize: false },
  mergekit: { name: 'della_linear', defaults: { normalize: false, rescale: 'l1' } },
  plan: { combine: 'task_arithmetic', sparsify: 'della', lambdas: 'one' },
});

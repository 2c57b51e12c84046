// DELLA-linear (mergekit `della_linear`): della.ts's rank-weighted seeded drop, rescaled, then task
// arithmetic instead of the sign election.
import { della } from './della.ts';
import { defineMethod } from './descriptor.ts';

export const dellaLinear = defineMethod({
  ...della,
  name: 'della_linear',
  label: 'DELLA (linear)',
  help:
    'Per row of τ each entry kept (seeded) with probability from density − dellaEpsilon for the smallest ' +
    '|τ| to density + dellaEpsilon for the largest, rescaled, then task arithmetic (λ Σ w τ̂). Rescale: ' +
    '1/p per entry (the DELLA paper, the default here), l1 (each agent keeps its L1 norm per tensor: ' +
    'mergekit’s default, rescale: true) or none.',
  defaults: { ...della.defaults, normalize: false },
  mergekit: { name: 'della_linear', defaults: { ...della.mergekit.defaults, normalize: false } },
  plan: { ...della.plan, combine: 'task_arithmetic' },
});

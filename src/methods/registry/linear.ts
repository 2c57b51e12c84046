// Linear (mergekit `linear`): the weighted mean of the models, no base.
import { defineMethod } from './descriptor.ts';

export const linear = defineMethod({
  name: 'linear',
  label: 'Linear: weighted mean of the models',
  help: 'Σ w θ / Σ w over the agents (normalize), the base not used.',
  parameters: ['weights', 'normalize'],
  defaults: { normalize: true },
  mergekit: { name: 'linear', defaults: { normalize: true } },
  plan: { combine: 'linear', lambdas: 'one' },
});

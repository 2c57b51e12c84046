// DARE (mergekit `dare_linear`): seeded random drop, rescaled, then task arithmetic.
import { defineMethod } from './descriptor.ts';

export const dareLinear = defineMethod({
  name: 'dare_linear',
  label: 'DARE (linear)',
  help: 'Each τ entry kept with probability density (seeded) and rescaled, then task arithmetic.',
  parameters: ['weights', 'density', 'lambda', 'normalize', 'seed', 'rescale'],
  defaults: { density: 0.5, normalize: false },
  mergekit: { name: 'dare_linear', defaults: { normalize: false, rescale: 'l1' } },
  plan: { combine: 'task_arithmetic', sparsify: 'dare', lambdas: 'one' },
});

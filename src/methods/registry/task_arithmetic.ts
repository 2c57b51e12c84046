// Task arithmetic (mergekit `task_arithmetic`): base + λ Σ w τ.
import { defineMethod } from './descriptor.ts';

export const taskArithmetic = defineMethod({
  name: 'task_arithmetic',
  label: 'Task arithmetic',
  help: 'θ₀ + λ Σ w τ (over Σ w when normalising).',
  parameters: ['weights', 'lambda', 'normalize'],
  defaults: { normalize: false },
  mergekit: { name: 'task_arithmetic', defaults: { normalize: false } },
  plan: { combine: 'task_arithmetic', lambdas: 'one' },
});

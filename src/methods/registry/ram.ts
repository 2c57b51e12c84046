// RAM (SPEC.md "RAM"): the mean of τ over the agents that changed an element; a change one agent made
// alone is kept whole.
import { defineMethod } from './descriptor.ts';

export const ram = defineMethod({
  name: 'ram',
  label: 'RAM: mean over contributing agents, unique updates kept',
  help: 'Mean of τ over the agents that changed an element (c ≥ 2); a change only one agent made is kept whole.',
  parameters: ['epsilon'],
  defaults: { normalize: false },
  mergekit: { name: 'ram', defaults: { normalize: false } },
  plan: { combine: 'ram', lambdas: 'one' },
});

// RAM+ (SPEC.md "RAM+"): RAM with each agent's unique changes scaled by λ = 1 + r·clip(ρ, 0, α), ρ the
// agent's shared / unique changed elements over the whole model.
import { defineMethod } from './descriptor.ts';

export const ramplus = defineMethod({
  name: 'ramplus',
  label: 'RAM+: RAM with unique updates rescaled by global ρ',
  help: 'RAM, unique changes scaled by λ_t = 1 + r·clip(ρ_t, 0, α), ρ_t = shared/unique over the whole model.',
  parameters: ['epsilon', 'r', 'alpha'],
  defaults: { normalize: false },
  mergekit: { closest: 'ramplus_tl', defaults: { normalize: false } },
  plan: { combine: 'ram', lambdas: 'global' },
  globalLambda: (stats, t, r, alpha) => 1 + r * Math.min(Math.max(stats.rho[t] ?? 0, 0), alpha),
});

// RAM+s (SPEC.md "RAM+s"): RAM+ with soft saturation, λ = 1 + r·shared / changed.
import { defineMethod } from './descriptor.ts';

export const ramplusSoft = defineMethod({
  name: 'ramplus_soft',
  label: 'RAM+s: RAM+ with soft saturation',
  help: 'RAM, unique changes scaled by λ_t = 1 + r·shared/changed over the whole model.',
  parameters: ['epsilon', 'r'],
  defaults: { normalize: false },
  mergekit: { closest: 'ramplus_tl', defaults: { normalize: false } },
  plan: { combine: 'ram', lambdas: 'global' },
  globalLambda: (stats, t, r) => 1 + (r * (stats.shared[t] ?? 0)) / (stats.changed[t] ?? 1),
});

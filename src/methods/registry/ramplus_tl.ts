// mergekit's tensor-local RAM+ (SPEC.md "Tensor-local RAM+"): ρ per agent and tensor, one pass.
import { defineMethod } from './descriptor.ts';

export const ramplusTl = defineMethod({
  name: 'ramplus_tl',
  label: 'RAM+ tensor-local (mergekit ramplus_tl)',
  help: 'RAM+ with ρ per agent and tensor: λ = 1 + r·clip(shared / max(unique, ε), 0, α) (mergekit’s ramplus_tl).',
  parameters: ['epsilon', 'r', 'alpha'],
  defaults: { alpha: 0.2, normalize: false },
  mergekit: { name: 'ramplus_tl', defaults: { normalize: false } },
  plan: { combine: 'ram', lambdas: 'tensor' },
});

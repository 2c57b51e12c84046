// TIES (mergekit `ties`): each agent's top-k |τ|, sign election, disjoint mean.
import { defineMethod } from './descriptor.ts';

/** The TIES rule for equal magnitudes at the top-k threshold, said where users look (card, help). */
export const TIES_TIE_RULE =
  'TIES keeps the floor(density·n) largest |τ| per tensor and agent; where several entries share the ' +
  'smallest kept magnitude, the lowest element indices are kept (deterministic). mergekit sorts with an ' +
  'unstable torch.argsort and keeps an arbitrary subset of those ties, so on such elements the two differ.';

export const ties = defineMethod({
  name: 'ties',
  label: 'TIES: trim, elect sign, disjoint mean',
  help: 'Per tensor and agent the floor(density·n) largest |τ|, sign election, mean of the agreeing agents.',
  parameters: ['weights', 'density', 'lambda', 'normalize'],
  defaults: { density: 0.5, normalize: true },
  mergekit: { name: 'ties', defaults: { normalize: true } },
  plan: { combine: 'ties', sparsify: 'topk', lambdas: 'one' },
  tieRule: TIES_TIE_RULE,
});

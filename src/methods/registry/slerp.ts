// SLERP (mergekit `slerp`): the base and one agent interpolated along the great circle, per tensor.
import { defineMethod } from './descriptor.ts';

export const slerp = defineMethod({
  name: 'slerp',
  label: 'SLERP: spherical interpolation of the base and one agent',
  help:
    'Exactly one agent: per tensor, from the base (t = 0) to the agent (t = 1) along the great circle, ' +
    'the angle from the normalised dot product of the whole tensor; nearly colinear tensors ' +
    '(|cos| > 0.9995) are interpolated linearly, as mergekit does.',
  parameters: ['t'],
  defaults: { t: 0.5 },
  mergekit: { name: 'slerp', defaults: {} },
  plan: { combine: 'slerp', lambdas: 'one' },
});

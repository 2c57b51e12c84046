// Default parameters of every method (SPEC.md: the paper's for RAM+, mergekit's elsewhere) and a
// one-line explanation of each parameter for the CLI help and the studio's method picker.
import { METHODS, type MethodName, type MethodParams } from './types.ts';

export function isMethod(value: string): value is MethodName {
  return (METHODS as readonly string[]).includes(value);
}

/** Which parameters a method reads; the others are ignored. */
export const METHOD_PARAMETERS: Record<MethodName, (keyof MethodParams)[]> = {
  ram: ['epsilon'],
  ramplus: ['epsilon', 'r', 'alpha'],
  ramplus_soft: ['epsilon', 'r'],
  ramplus_tl: ['epsilon', 'r', 'alpha'],
  linear: ['weights', 'normalize'],
  task_arithmetic: ['weights', 'lambda', 'normalize'],
  ties: ['weights', 'density', 'lambda', 'normalize'],
  dare_linear: ['weights', 'density', 'lambda', 'normalize', 'seed'],
  dare_ties: ['weights', 'density', 'lambda', 'normalize', 'seed'],
};

export const PARAMETER_HELP: Record<keyof MethodParams, string> = {
  method: 'Merge method.',
  epsilon: 'An element counts as changed by an agent when |θ_agent − θ_base| > ε.',
  r: 'RAM+ strength: unique updates are scaled by λ = 1 + r·clip(ρ, 0, α).',
  alpha: 'RAM+ clip on ρ = shared / unique changed elements.',
  lambda: 'Scale of the summed task vectors (task arithmetic, TIES, DARE).',
  density:
    'Share of each agent’s task vector kept. TIES keeps the floor(density·n) largest |τ| of each tensor; ' +
    'where several entries share the smallest kept magnitude, the lowest element indices are kept ' +
    '(deterministic; mergekit’s unstable sort keeps an arbitrary subset of them). DARE keeps entries ' +
    'at random and rescales them.',
  weights: 'Per-agent weights, one per agent, in order.',
  normalize: 'Divide by the sum of weights (of the agreeing agents’ weights, for TIES and DARE-TIES).',
  seed: 'Seed of DARE’s random drop mask (the same seed gives the same merge, on CPU and GPU).',
  rescale:
    'How DARE rescales the entries it keeps: by 1/density (the DARE paper; the default here), or so ' +
    'that each agent’s L1 norm per tensor is kept (l1, mergekit’s default), or not at all (none).',
  dareScales: 'Per-tensor DARE factors, computed by the merge from the rescale rule.',
};

export function defaultParams(method: MethodName, agents: number): MethodParams {
  const dare = method === 'dare_linear' || method === 'dare_ties';
  return {
    method,
    epsilon: 1e-5,
    r: 0.1,
    alpha: method === 'ramplus_tl' ? 0.2 : 2.0,
    lambda: 1,
    density: Array.from({ length: agents }, () => (dare || method === 'ties' ? 0.5 : 1)),
    weights: Array.from({ length: agents }, () => 1),
    // mergekit's defaults: normalised for linear and the sign-consensus methods only.
    normalize: method === 'linear' || method === 'ties' || method === 'dare_ties',
    seed: 0,
  };
}

/**
 * What a mergekit recipe means where it does not say (mergekit's `merge_methods/registry.py`, SPEC.md
 * "Baselines"): density 1, normalize only for linear and ties, DARE rescaled by the L1 rule.
 */
export function mergekitDefaults(method: MethodName, agents: number): MethodParams {
  const dare = method === 'dare_linear' || method === 'dare_ties';
  return {
    ...defaultParams(method, agents),
    density: Array.from({ length: agents }, () => 1),
    normalize: method === 'linear' || method === 'ties',
    ...(dare ? { rescale: 'l1' as const } : {}),
  };
}

/** Checks values a user can get wrong and says which one, with the accepted range. */
export function validateParams(params: MethodParams, agents: number): string[] {
  const problems: string[] = [];
  if (!(params.epsilon >= 0) || !Number.isFinite(params.epsilon)) problems.push('epsilon must be ≥ 0');
  if (!Number.isFinite(params.r)) problems.push('r must be a finite number');
  if (!(params.alpha >= 0) || !Number.isFinite(params.alpha)) problems.push('alpha must be ≥ 0');
  if (!Number.isFinite(params.lambda)) problems.push('lambda must be a finite number');
  if (params.weights.length !== agents)
    problems.push(`${params.weights.length} weights given for ${agents} agents (give one per agent)`);
  if (params.weights.some((w) => !Number.isFinite(w))) problems.push('weights must be finite numbers');
  if (params.density.length !== agents)
    problems.push(`${params.density.length} densities given for ${agents} agents`);
  if (params.density.some((d) => !(d > 0 && d <= 1))) problems.push('density must be in (0, 1]');
  if (!Number.isInteger(params.seed) || params.seed < 0 || params.seed > 0xffffffff)
    problems.push('seed must be an integer in [0, 2^32)');
  if (params.method === 'linear' && params.normalize && params.weights.reduce((a, b) => a + b, 0) === 0)
    problems.push('linear with normalize needs weights that do not sum to 0');
  return problems;
}

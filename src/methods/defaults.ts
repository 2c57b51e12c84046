// Default parameters of every method (SPEC.md: the paper's for RAM+, mergekit's elsewhere) and a
// one-line explanation of each parameter for the CLI help and the studio's method picker.
import { METHOD_LIST, methodOf } from './registry/index.ts';
import { METHODS, type MethodName, type MethodParams } from './types.ts';

export function isMethod(value: string): value is MethodName {
  return (METHODS as readonly string[]).includes(value);
}

/** Which parameters a method reads; the others are ignored (each method's descriptor). */
export const METHOD_PARAMETERS = Object.fromEntries(
  METHOD_LIST.map((d) => [d.name, [...d.parameters]]),
) as Record<MethodName, (keyof MethodParams)[]>;

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
  gamma:
    'Model Breadcrumbs: per agent, the share of each tensor’s largest |τ| dropped as outliers ' +
    '(floor(gamma·n) entries) before the floor(density·n) next largest are kept.',
};

/** Model Breadcrumbs' share of outliers dropped where nothing says (mergekit's default). */
export const DEFAULT_GAMMA = 0.01;

export function defaultParams(method: MethodName, agents: number): MethodParams {
  const { defaults } = methodOf(method);
  const each = (value: number): number[] => Array.from({ length: agents }, () => value);
  return {
    method,
    epsilon: 1e-5,
    r: 0.1,
    alpha: defaults.alpha ?? 2.0,
    lambda: 1,
    density: each(defaults.density ?? 1),
    weights: each(1),
    normalize: defaults.normalize,
    seed: 0,
    ...(defaults.gamma === undefined ? {} : { gamma: each(defaults.gamma) }),
  };
}

/**
 * What a mergekit recipe means where it does not say (mergekit's `merge_methods/registry.py`, SPEC.md
 * "Baselines"): density 1, each method's normalize and rescale defaults.
 */
export function mergekitDefaults(method: MethodName, agents: number): MethodParams {
  const { mergekit } = methodOf(method);
  return {
    ...defaultParams(method, agents),
    density: Array.from({ length: agents }, () => 1),
    normalize: mergekit.normalize,
    ...(mergekit.rescale ? { rescale: mergekit.rescale } : {}),
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
  if (params.gamma?.some((g) => !(g >= 0 && g <= 1))) problems.push('gamma must be in [0, 1]');
  if (!Number.isInteger(params.seed) || params.seed < 0 || params.seed > 0xffffffff)
    problems.push('seed must be an integer in [0, 2^32)');
  if (params.method === 'linear' && params.normalize && params.weights.reduce((a, b) => a + b, 0) === 0)
    problems.push('linear with normalize needs weights that do not sum to 0');
  return problems;
}

// Every merge parameter, declared once: its type, default, range, help, mergekit key, CLI flag and
// studio widget. ParamValues, the CLI, the YAML reader and writer, the session link, the studio and
// the model card are generic over this table; a method names the specs it reads (registry/).
// Below the registry, so a descriptor can name them.

import { DEFAULT_GAMMA } from './band.ts';
import { RESCALE_RULES, type ParamRange, type ParamSpec } from './param-spec.ts';
import { SPARSIFIER_PARAMS } from './sparsifiers.ts';

export type { DareRescale, ParamKind, ParamRange, ParamScalar, ParamScope, ParamSpec } from './param-spec.ts';
export { DEFAULT_GAMMA };

/** Keeps every literal (kinds, scopes, enum values, `optional`), so ParamValues can be spelled from it. */
function defineParams<const T extends Record<string, ParamSpec>>(specs: T): T {
  return specs;
}

/**
 * The parameters, in the order the CLI help, Compare and the model card list them (a method's
 * descriptor orders its own for the studio).
 */
export const PARAM_SPECS = defineParams({
  weights: {
    kind: 'number',
    scope: 'agent',
    default: 1,
    help: 'Per-agent weights, one per agent, in order.',
    mergekit: { key: 'weight', anyMethod: true, required: true },
    flag: 'weight',
    perTensor: true,
    card: 'weight',
    keepOnMethodChange: true,
  },
  density: {
    kind: 'number',
    scope: 'agent',
    default: 1,
    range: { min: 0, max: 1, minOpen: true },
    help:
      'Share of each agent’s task vector kept. TIES keeps the floor(density·n) largest |τ| of each tensor; ' +
      'where several entries share the smallest kept magnitude, the lowest element indices are kept ' +
      '(deterministic; mergekit’s unstable sort keeps an arbitrary subset of them). DARE keeps entries ' +
      'at random and rescales them.',
    mergekit: { key: 'density', default: 1, anyMethod: true },
    flag: 'density',
    perTensor: true,
    card: 'density',
  },
  gamma: {
    kind: 'number',
    scope: 'agent',
    optional: true,
    default: DEFAULT_GAMMA,
    range: { min: 0, max: 1 },
    help:
      'Model Breadcrumbs: per agent, the share of each tensor’s largest |τ| dropped as outliers ' +
      '(floor(gamma·n) entries) before the floor(density·n) next largest are kept.',
    mergekit: { key: 'gamma' },
    flag: 'gamma',
    perTensor: true,
    card: 'gamma',
  },
  lambda: {
    kind: 'number',
    scope: 'global',
    default: 1,
    help: 'Scale of the summed task vectors (task arithmetic, TIES, DARE).',
    label: 'λ',
    mergekit: { key: 'lambda', anyMethod: true },
    flag: 'lambda',
    perTensor: true,
    card: 'λ',
  },
  epsilon: {
    kind: 'number',
    scope: 'global',
    default: 1e-5,
    range: { min: 0 },
    help: 'An element counts as changed by an agent when |θ_agent − θ_base| > ε.',
    label: 'ε',
    mergekit: { key: 'epsilon', anyMethod: true },
    flag: 'epsilon',
    perTensor: true,
    card: 'ε',
    keepOnMethodChange: true,
  },
  r: {
    kind: 'number',
    scope: 'global',
    default: 0.1,
    // Negative r would scale unique updates below 1, to λ = 1 − 10 at r = −5 (issue 38): not RAM+.
    range: { min: 0 },
    help: 'RAM+ strength: unique updates are scaled by λ = 1 + r·clip(ρ, 0, α).',
    mergekit: { key: 'r', anyMethod: true },
    flag: 'r',
    perTensor: true,
  },
  alpha: {
    kind: 'number',
    scope: 'global',
    default: 2,
    range: { min: 0 },
    help: 'RAM+ clip on ρ = shared / unique changed elements.',
    mergekit: { key: 'alpha', anyMethod: true },
    flag: 'alpha',
    perTensor: true,
  },
  normalize: {
    kind: 'boolean',
    scope: 'global',
    default: false,
    help: 'Divide by the sum of weights (of the agreeing agents’ weights, for TIES and DARE-TIES).',
    mergekit: { key: 'normalize', anyMethod: true },
    flag: 'normalize',
  },
  seed: {
    kind: 'integer',
    scope: 'global',
    default: 0,
    range: { min: 0, max: 2 ** 32, maxOpen: true, text: '[0, 2^32)' },
    help: 'Seed of DARE’s random drop mask (the same seed gives the same merge, on CPU and GPU).',
    mergekit: { key: 'seed', anyMethod: true, write: false, topLevel: 'random_seed' },
    flag: 'seed',
  },
  rescale: {
    kind: 'enum',
    scope: 'global',
    values: RESCALE_RULES,
    optional: true,
    default: 'density',
    help:
      'How a random drop (DARE and the rank-weighted drops) rescales the entries it keeps: by 1/p, p the ' +
      'entry’s keep probability (1/density for DARE: the papers’ rule, the default here), or so that each ' +
      'agent’s L1 norm per tensor is kept (l1, mergekit’s default), or not at all (none).',
    mergekit: {
      key: 'rescale',
      anyMethod: true,
      // mergekit's rescale is a boolean: true is the L1 rule, false none; "density" is this tool's own.
      toYaml: (rule) => rule !== 'none',
      fromYaml: (value) =>
        value === true || value === 'l1'
          ? 'l1'
          : value === false || value === 'none'
            ? 'none'
            : value === 'density'
              ? 'density'
              : undefined,
      forms: 'true (l1), false (none) or "density"',
    },
    flag: 'rescale',
  },
  // The sparsifiers' own parameters, declared beside their implementations (sparsifiers.ts).
  ...SPARSIFIER_PARAMS,
  t: {
    kind: 'number',
    scope: 'global',
    optional: true,
    default: 0.5,
    help: 'SLERP: where between the base (t = 0) and the agent (t = 1) the merge lies.',
    mergekit: { key: 't' },
    flag: 't',
    perTensor: true,
    card: 't',
  },
  dareScales: {
    kind: 'number',
    scope: 'agent',
    optional: true,
    default: 1,
    help:
      'Per agent, the factor DARE’s kept entries of this tensor are multiplied by, replacing the one ' +
      'the rescale rule gives from density alone; the driver sets it per tensor for l1 (a norms pre-pass).',
    internal: true,
  },
});

type Specs = typeof PARAM_SPECS;
export type ParamKey = keyof Specs;

type ScalarOf<S> = S extends { kind: 'boolean' }
  ? boolean
  : S extends { kind: 'enum'; values: readonly (infer V)[] }
    ? V
    : number;
type ValueOf<S> = S extends { scope: 'agent' } ? ScalarOf<S>[] : ScalarOf<S>;
type OptionalKey = { [K in ParamKey]: Specs[K] extends { optional: true } ? K : never }[ParamKey];

/** Every parameter's value, as the table above declares it; a method reads those its descriptor lists. */
export type ParamValues = { -readonly [K in Exclude<ParamKey, OptionalKey>]: ValueOf<Specs[K]> } & {
  -readonly [K in OptionalKey]?: ValueOf<Specs[K]>;
};

/** One value of a parameter (a per-agent parameter's value for one agent). */
export type ParamScalarOf<K extends ParamKey> = ScalarOf<Specs[K]>;

/** The parameters a method can read (the internal ones are the merge's own). */
export type ParameterKey = { [K in ParamKey]: Specs[K] extends { internal: true } ? never : K }[ParamKey];

/** Default values a method sets where they are not the spec's (one value per per-agent parameter). */
export type ParamDefaults = { [K in ParameterKey]?: ParamScalarOf<K> };

export const PARAM_KEYS = Object.keys(PARAM_SPECS) as ParamKey[];

/** The spec of a key (every ParamKey has one). */
export function specOf(key: ParamKey): ParamSpec {
  return PARAM_SPECS[key];
}

/** The parameters a user sets (flags, recipes, the studio, links), in table order. */
export const USER_PARAMS = PARAM_KEYS.filter((k) => !specOf(k).internal) as ParameterKey[];

/** SLERP's t where nothing says (mergekit requires one; the middle here). */
export const DEFAULT_SLERP_T = PARAM_SPECS.t.default;

/** The range as messages write it: (0, 1], [0, 1], ≥ 0. */
export function rangeText(range: ParamRange): string {
  if (range.text) return range.text;
  if (range.max === undefined) return `${range.minOpen ? '>' : '≥'} ${range.min}`;
  if (range.min === undefined) return `${range.maxOpen ? '<' : '≤'} ${range.max}`;
  return `${range.minOpen ? '(' : '['}${range.min}, ${range.max}${range.maxOpen ? ')' : ']'}`;
}

/**
 * What is wrong with one number for a parameter, as the end of a sentence that starts with the value
 * ("1.5 is outside (0, 1]"), or undefined where it is accepted.
 */
export function rangeProblem(spec: ParamSpec, value: number): string | undefined {
  if (!Number.isFinite(value)) return 'must be a finite number';
  const { range } = spec;
  const inside =
    !range ||
    ((range.min === undefined || (range.minOpen ? value > range.min : value >= range.min)) &&
      (range.max === undefined || (range.maxOpen ? value < range.max : value <= range.max)));
  if (spec.kind === 'integer' && (!Number.isInteger(value) || !inside))
    return `must be an integer${range ? ` in ${rangeText(range)}` : ''}`;
  if (inside || !range) return undefined;
  return range.max === undefined || range.min === undefined
    ? `must be ${rangeText(range)}`
    : `is outside ${rangeText(range)}`;
}

/** "density, l1 or none". */
export function listed(values: readonly string[], last = 'or'): string {
  return values.length < 2
    ? values.join('')
    : `${values.slice(0, -1).join(', ')} ${last} ${values[values.length - 1]}`;
}

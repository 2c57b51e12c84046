// Every merge parameter, declared once: its type, default, range, help, mergekit key, CLI flag and
// studio widget. ParamValues, the CLI, the YAML reader and writer, the session link, the studio and
// the model card are generic over this table; a method names the specs it reads (registry/).
// Below the registry, so a descriptor can name them.

/** A value of one agent (scope `agent`: a list, one per agent) or of the whole merge (`global`). */
export type ParamScope = 'global' | 'agent';
export type ParamKind = 'number' | 'integer' | 'boolean' | 'enum';
export type ParamScalar = number | boolean | string;

/** Accepted numbers: [min, max] with either end open or absent; `text` says it in messages. */
export interface ParamRange {
  min?: number;
  max?: number;
  minOpen?: boolean;
  maxOpen?: boolean;
  /** How messages write the range where the numbers alone read badly (2^32). */
  text?: string;
}

export interface ParamSpec {
  kind: ParamKind;
  scope: ParamScope;
  /** An enum's values, in the order help and messages list them. */
  values?: readonly string[];
  /**
   * May be absent from a MethodParams: absent means `default`. A method's defaults (descriptor
   * `defaults`) that name it fill it in; the others leave it out.
   */
  optional?: boolean;
  /** The value where nothing says (a method's descriptor `defaults` may override it). */
  default: ParamScalar;
  /** Checked on every value from the CLI, a recipe (each number of a gradient) and the studio. */
  range?: ParamRange;
  /** One line for the CLI help, the studio and the model card. */
  help: string;
  /** The studio's and Compare's name for it where not the key (λ, ε). */
  label?: string;
  /** Set by the merge itself (per tensor): no flag, no recipe key, no widget, not saved. */
  internal?: boolean;
  mergekit?: {
    /** Its key in mergekit's YAML: under `parameters:` (global) or a model's `parameters:` (agent). */
    key: string;
    /** mergekit's default where it differs from ours (density: mergekit keeps everything). */
    default?: ParamScalar;
    /**
     * mergekit's base schema: every method's recipe may carry it (a method that does not read it
     * notes that it is unused). Without it, only the methods that read it accept it.
     */
    anyMethod?: boolean;
    /** Not written into an exported recipe (mergekit has no such parameter). */
    write?: false;
    /** A top-level key of the recipe that sets it too (mergekit's `random_seed`). */
    topLevel?: string;
    /** mergekit refuses a model without it. */
    required?: boolean;
    /** The recipe's value, where it is not the value itself. */
    toYaml?: (value: ParamScalar | undefined) => ParamScalar;
    /** The value of a recipe's setting, or undefined where it is none of the accepted forms. */
    fromYaml?: (value: ParamScalar) => ParamScalar | undefined;
    /** The accepted forms, for the error that refuses another. */
    forms?: string;
  };
  /** Its command-line flag (without --): a boolean gets --flag and --no-flag. Absent: no flag. */
  flag?: string;
  /** A recipe's gradient or filter may set it per tensor (resolved in resolve.ts). */
  perTensor?: boolean;
  /** Its column in the model card's per-tensor table. */
  card?: string;
  /** Kept when the studio switches method (the others take the new method's defaults). */
  keepOnMethodChange?: boolean;
  /** The studio's number input: its step ('any' where absent). */
  step?: number | 'any';
}

/** Keeps every literal (kinds, scopes, enum values, `optional`), so ParamValues can be spelled from it. */
function defineParams<const T extends Record<string, ParamSpec>>(specs: T): T {
  return specs;
}

const RESCALE_RULES = ['density', 'l1', 'none'] as const;

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
    default: 0.01,
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
      'How DARE rescales the entries it keeps: by 1/density (the DARE paper; the default here), or so ' +
      'that each agent’s L1 norm per tensor is kept (l1, mergekit’s default), or not at all (none). ' +
      'DELLA: by 1/p of each kept entry (the DELLA paper; the default here), l1 (mergekit’s) or none.',
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
  dellaEpsilon: {
    kind: 'number',
    scope: 'agent',
    optional: true,
    default: 0.15,
    // density ± ε inside (0, 1) needs ε < min(density, 1 − density) ≤ 0.5.
    range: { min: 0, max: 0.5, maxOpen: true },
    help:
      'DELLA: per agent, the spread of the keep probabilities: density − ε for the smallest |τ| of a row, ' +
      'density + ε for the largest (mergekit’s per-model epsilon, default 0.15; not RAM’s ε). ' +
      'density ± ε must lie inside (0, 1).',
    label: 'ε (DELLA)',
    mergekit: { key: 'epsilon' },
    flag: 'della-epsilon',
    perTensor: true,
    card: 'ε (DELLA)',
  },
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

/** How DARE rescales the entries it keeps (see PARAM_SPECS.rescale). */
export type DareRescale = (typeof RESCALE_RULES)[number];

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

/** Model Breadcrumbs' share of outliers dropped where nothing says (mergekit's default). */
export const DEFAULT_GAMMA = PARAM_SPECS.gamma.default;

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

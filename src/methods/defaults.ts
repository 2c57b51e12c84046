// Default parameters of every method (SPEC.md: the paper's for RAM+, mergekit's elsewhere), their
// checks, and which specs a method reads: all generic over PARAM_SPECS (params.ts) and the registry.
import { METHOD_LIST, methodOf } from './registry/index.ts';
import {
  PARAM_SPECS,
  rangeProblem,
  rangeText,
  specOf,
  USER_PARAMS,
  type ParamDefaults,
  type ParameterKey,
  type ParamScalar,
  type ParamSpec,
} from './params.ts';
import { METHODS, type MethodName, type MethodParams } from './types.ts';
import { SPARSIFIER_PARAMS, SPARSIFIERS } from './sparsifiers.ts';
import { slerpAgentsProblem } from './slerp.ts';

export function isMethod(value: string): value is MethodName {
  return (METHODS as readonly string[]).includes(value);
}

/** Which parameters a method reads; the others are ignored (each method's descriptor). */
export const METHOD_PARAMETERS = Object.fromEntries(
  METHOD_LIST.map((d) => [d.name, [...d.parameters]]),
) as Record<MethodName, ParameterKey[]>;

export function readsParam(method: MethodName, key: ParameterKey): boolean {
  return methodOf(method).parameters.includes(key);
}

/** A params record as a map from key to value, for the code that is generic over the specs. */
export function paramsRecord(params: MethodParams): Record<string, ParamScalar | number[] | undefined> {
  return params as unknown as Record<string, ParamScalar | number[] | undefined>;
}

/**
 * `defaults` over `params` (a per-agent parameter's one value given to every agent); `present`: only
 * over parameters the params already have.
 */
function applyDefaults(
  params: MethodParams,
  defaults: ParamDefaults,
  agents: number,
  present: boolean,
): void {
  const record = paramsRecord(params);
  for (const key of USER_PARAMS) {
    const value = defaults[key];
    if (value === undefined || (present && record[key] === undefined)) continue;
    record[key] =
      specOf(key).scope === 'agent' ? Array.from({ length: agents }, () => value as number) : value;
  }
}

export function defaultParams(method: MethodName, agents: number): MethodParams {
  const params = { method } as MethodParams;
  const required: ParamDefaults = {};
  // An optional parameter is there only where its method's defaults name it.
  for (const key of USER_PARAMS)
    if (!specOf(key).optional) (required as Record<string, ParamScalar>)[key] = specOf(key).default;
  applyDefaults(params, required, agents, false);
  applyDefaults(params, methodOf(method).defaults, agents, false);
  return params;
}

/**
 * What a mergekit recipe means where it does not say (mergekit's `merge_methods/registry.py`, SPEC.md
 * "Baselines"): the specs' mergekit defaults (density 1), then each method's (normalize, rescale).
 */
export function mergekitDefaults(method: MethodName, agents: number): MethodParams {
  const params = defaultParams(method, agents);
  const specDefaults: ParamDefaults = {};
  for (const key of USER_PARAMS) {
    const value = specOf(key).mergekit?.default;
    if (value !== undefined) (specDefaults as Record<string, ParamScalar>)[key] = value;
  }
  applyDefaults(params, specDefaults, agents, true);
  applyDefaults(params, methodOf(method).mergekit.defaults, agents, false);
  return params;
}

/** "density" → "densities", "weights" stays: the plural messages use for a per-agent list. */
function plural(key: string): string {
  return key.endsWith('s') ? key : key.endsWith('y') ? `${key.slice(0, -1)}ies` : `${key}s`;
}

/**
 * The studio's and the flags' wording of a range problem (rangeProblem words it for one value):
 * "must be in (0, 1]", "must be ≥ 0", "must be finite numbers" for a list.
 */
function rangeSentence(spec: ParamSpec, problem: string): string {
  if (problem === 'must be a finite number')
    return spec.scope === 'agent' ? 'must be finite numbers' : problem;
  if (!spec.range || spec.kind === 'integer') return problem;
  const text = rangeText(spec.range);
  return `must be ${/^[[(]/.test(text) ? 'in ' : ''}${text}`;
}

/** What is wrong with one parameter's value (every spec's range and form), one message per problem. */
export function paramProblems(key: ParameterKey, value: unknown, agents: number): string[] {
  const spec = specOf(key);
  if (value === undefined) return spec.optional ? [] : [`${key} is missing`];
  if (spec.kind === 'boolean') return typeof value === 'boolean' ? [] : [`${key} must be true or false`];
  if (spec.kind === 'enum')
    return (spec.values ?? []).includes(value as string)
      ? []
      : [`${key} must be one of ${(spec.values ?? []).join(', ')}`];
  const values = spec.scope === 'agent' ? (value as number[]) : [value as number];
  const problems: string[] = [];
  if (spec.scope === 'agent' && values.length !== agents)
    problems.push(`${values.length} ${plural(key)} given for ${agents} agents (give one per agent)`);
  const bad = values.map((v) => rangeProblem(spec, v)).find((p) => p !== undefined);
  if (bad) problems.push(`${key} ${rangeSentence(spec, bad)}`);
  return problems;
}

/** Checks values a user can get wrong and says which one, with the accepted range (every spec's). */
/** f32's smallest normal value, 2^-126. */
const F32_MIN_NORMAL = 2 ** -126;

export function validateParams(params: MethodParams, agents: number): string[] {
  const record = paramsRecord(params);
  const problems = USER_PARAMS.flatMap((key) => paramProblems(key, record[key], agents));
  // The engines compute in f32, and a GPU may flush f32's subnormals to 0: a weight below f32's
  // smallest normal merges as 0 (a linear merge of such weights wrote an all-zero model, issue 38).
  params.weights.forEach((w, t) => {
    if (w !== 0 && Math.abs(w) < F32_MIN_NORMAL)
      problems.push(
        `weights ${w} (agent ${t + 1}) is below f32's smallest normal ${F32_MIN_NORMAL.toExponential(2)} ` +
          'and merges as 0: scale every weight up by the same factor',
      );
  });
  if (params.method === 'linear' && params.normalize && params.weights.reduce((a, b) => a + b, 0) === 0)
    problems.push('linear with normalize needs weights that do not sum to 0');
  const { plan } = methodOf(params.method);
  // A sparsifier's density and own parameters, together where each is in range (a value out of range
  // is said once, above).
  const agentProblem = plan.sparsify && SPARSIFIERS[plan.sparsify].agentProblem;
  if (agentProblem) {
    const own = ['density', ...Object.keys(SPARSIFIER_PARAMS)] as ParameterKey[];
    const inRange = (t: number): boolean =>
      own.every((key) => {
        const value = (record[key] as readonly number[] | undefined)?.[t] ?? (specOf(key).default as number);
        return !readsParam(params.method, key) || !rangeProblem(specOf(key), value);
      });
    params.density.forEach((_, t) => {
      const problem = inRange(t) ? agentProblem(params, t) : undefined;
      if (problem) problems.push(problem);
    });
  }
  if (plan.combine === 'slerp') {
    const problem = slerpAgentsProblem(agents);
    if (problem) problems.push(problem);
  }
  return problems;
}

/**
 * The spec a recipe key means for a method: one it reads under that mergekit key, else one of
 * mergekit's base schema (`anyMethod`); undefined where the method accepts no such key. Per method,
 * since two specs may share a mergekit key (a global and a per-model `epsilon`). `scope` narrows it
 * to a model's keys.
 */
export function specForYaml(method: MethodName, yamlKey: string, scope?: 'agent'): ParameterKey | undefined {
  const fits = (key: ParameterKey): boolean =>
    specOf(key).mergekit?.key === yamlKey && (scope === undefined || specOf(key).scope === scope);
  return (
    methodOf(method).parameters.find(fits) ??
    USER_PARAMS.find((k) => fits(k) && specOf(k).mergekit?.anyMethod)
  );
}

/** The global specs a method's recipe may set (those whose mergekit key means them for it). */
export function recipeGlobals(method: MethodName): ParameterKey[] {
  return USER_PARAMS.filter((key) => {
    const spec = specOf(key);
    return spec.scope === 'global' && spec.mergekit && specForYaml(method, spec.mergekit.key) === key;
  });
}

/** The per-model specs a method reads from a recipe, in its descriptor's order. */
export function recipePerModel(method: MethodName): ParameterKey[] {
  return methodOf(method).parameters.filter((key) => specOf(key).scope === 'agent' && specOf(key).mergekit);
}

/** The mergekit keys a method's models may carry (read or of mergekit's base schema), in table order. */
export function recipeModelKeys(method: MethodName): string[] {
  return USER_PARAMS.filter((key) => {
    const spec = specOf(key);
    return spec.scope === 'agent' && spec.mergekit && (readsParam(method, key) || spec.mergekit.anyMethod);
  }).map(yamlKeyOf);
}

/** The global specs an exported recipe writes, in the descriptor's order. */
export function mergekitGlobals(method: MethodName): ParameterKey[] {
  return methodOf(method).parameters.filter((key) => {
    const spec = specOf(key);
    return spec.scope === 'global' && spec.mergekit && spec.mergekit.write !== false;
  });
}

/** The mergekit key of a spec (every spec a recipe reads has one). */
export function yamlKeyOf(key: ParameterKey): string {
  return specOf(key).mergekit?.key ?? key;
}

/** A per-agent parameter's value for agent t, its default where the list is absent or short. */
export function agentValue(params: MethodParams, key: ParameterKey, t: number): number {
  const list = paramsRecord(params)[key] as number[] | undefined;
  return list?.[t] ?? (PARAM_SPECS[key].default as number);
}

/** Sets agent m's value of a per-agent parameter, filling an absent list with the default first. */
export function setAgentValue(params: MethodParams, key: ParameterKey, m: number, value: number): void {
  const record = paramsRecord(params);
  const list =
    (record[key] as number[] | undefined) ?? params.weights.map(() => specOf(key).default as number);
  list[m] = value;
  record[key] = list;
}

/** A copy whose per-agent lists are copies too, so a change to one agent's value stays there. */
export function copyParams(params: MethodParams): MethodParams {
  const copy = { ...params };
  const record = paramsRecord(copy);
  for (const [key, value] of Object.entries(record)) if (Array.isArray(value)) record[key] = [...value];
  return copy;
}

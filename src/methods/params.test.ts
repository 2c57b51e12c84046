// The parameter table (params.ts) and the readers generic over it: every key declared once, ranges
// refused alike by the CLI, recipes, the studio and links, and values that survive YAML and flags.
import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { OPTIONS, paramsFromFlags, PARAM_FLAGS, type Values } from '../cli/args.ts';
import { parseSessionRecipe, serializeSessionRecipe } from '../state/session.ts';
import {
  defaultParams,
  mergekitDefaults,
  paramsRecord,
  readsParam,
  recipeModelKeys,
  specForYaml,
  validateParams,
} from './defaults.ts';
import {
  PARAM_KEYS,
  PARAM_SPECS,
  rangeProblem,
  specOf,
  USER_PARAMS,
  type ParameterKey,
  type ParamSpec,
  type ParamValues,
} from './params.ts';
import { parseMergekitYaml, RecipeError, toMergekitYaml, type Recipe } from './recipe.ts';
import { METHOD_LIST } from './registry/index.ts';
import { METHODS, type MethodName, type MethodParams } from './types.ts';

const AGENTS = 3;

/** Agents a method merges here: SLERP takes exactly one, every other method AGENTS. */
function agentsFor(method: MethodName): number {
  return METHOD_LIST.find((d) => d.name === method)!.plan.combine === 'slerp' ? 1 : AGENTS;
}

/** Every key of a full ParamValues, as the type spells it: a key added to the type without a spec fails here. */
const TYPE_KEYS: Record<keyof Required<ParamValues>, true> = {
  weights: true,
  density: true,
  gamma: true,
  lambda: true,
  epsilon: true,
  r: true,
  alpha: true,
  normalize: true,
  seed: true,
  rescale: true,
  dareScales: true,
  dellaEpsilon: true,
  t: true,
};

/** A small deterministic generator, so a failure names values that can be reproduced. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** A value inside the spec's range, other than its default where it can be. */
function inside(spec: ParamSpec, random: () => number): number {
  const { min = -4, max = 4 } = spec.range ?? {};
  const top = Number.isFinite(max) ? max : min + 8;
  const raw = min + (top - min) * (0.05 + 0.9 * random());
  return spec.kind === 'integer' ? Math.floor(raw) : Math.round(raw * 1e4) / 1e4;
}

/** Values just outside the range (the open ends themselves), and non-finite ones. */
function outside(spec: ParamSpec): number[] {
  const range = spec.range;
  const values = [Number.NaN, Number.POSITIVE_INFINITY];
  if (range?.min !== undefined) values.push(range.minOpen ? range.min : range.min - 0.5);
  if (range?.max !== undefined) values.push(range.maxOpen ? range.max : range.max + 0.5);
  if (spec.kind === 'integer') values.push(0.5);
  return values;
}

/** A method reading `key` (the last: linear, the first for weights, takes no base). */
function readerOf(key: ParameterKey): MethodName {
  const method = METHODS.findLast((m) => readsParam(m, key));
  if (!method) throw new Error(`no method reads ${key}`);
  return method;
}

/** Params of `method` with every parameter it reads set to a fresh value inside its range. */
function randomParams(method: MethodName, random: () => number): MethodParams {
  const agents = agentsFor(method);
  const params = defaultParams(method, agents);
  const record = paramsRecord(params);
  for (const key of METHOD_LIST.find((d) => d.name === method)!.parameters) {
    const spec = specOf(key);
    const value = (): number | boolean | string =>
      spec.kind === 'boolean'
        ? random() < 0.5
        : spec.kind === 'enum'
          ? // 'density' is this tool's own rule: mergekit's YAML writes it as true, the L1 rule.
            (spec.values ?? []).filter((v) => v !== 'density')[Math.floor(random() * 2)]!
          : inside(spec, random);
    record[key] = spec.scope === 'agent' ? Array.from({ length: agents }, () => value() as number) : value();
  }
  return params;
}

describe('the parameter table', () => {
  it('declares every key of ParamValues once, and nothing else', () => {
    expect([...PARAM_KEYS].sort()).toEqual(Object.keys(TYPE_KEYS).sort());
    expect(new Set(PARAM_KEYS).size).toBe(PARAM_KEYS.length);
  });

  it('has every params object of every method hold only declared keys, each of its declared type', () => {
    for (const method of METHODS) {
      const agents = agentsFor(method);
      for (const params of [defaultParams(method, agents), mergekitDefaults(method, agents)]) {
        for (const [key, value] of Object.entries(params)) {
          if (key === 'method') continue;
          expect(PARAM_KEYS, `${method}.${key}`).toContain(key);
          const spec = specOf(key as ParameterKey);
          if (spec.scope === 'agent') expect(value, `${method}.${key}`).toHaveLength(agents);
          else if (spec.kind === 'boolean') expect(typeof value).toBe('boolean');
          else if (spec.kind === 'enum') expect(spec.values).toContain(value);
          else expect(typeof value).toBe('number');
        }
        // Every required spec is there; no method reads an internal one.
        for (const key of USER_PARAMS)
          if (!specOf(key).optional) expect(paramsRecord(params)[key], `${method}.${key}`).toBeDefined();
        expect(validateParams(params, agents), method).toEqual([]);
      }
    }
  });

  it('gives each method a list of distinct user parameters', () => {
    for (const d of METHOD_LIST) {
      expect(new Set(d.parameters).size, d.name).toBe(d.parameters.length);
      for (const key of d.parameters) expect(USER_PARAMS, `${d.name}: ${key}`).toContain(key);
    }
  });

  it('keeps each default inside its own range, and gives every user parameter help', () => {
    for (const key of USER_PARAMS) {
      const spec = specOf(key);
      expect(spec.help.length, key).toBeGreaterThan(10);
      if (typeof spec.default === 'number') expect(rangeProblem(spec, spec.default), key).toBeUndefined();
      if (spec.kind === 'enum') expect(spec.values).toContain(spec.default);
    }
  });

  it('gives each flag one parameter and no command flag, and each recipe key one spec per method', () => {
    const flags = PARAM_FLAGS.flatMap(({ spec, flag }) =>
      spec.kind === 'boolean' ? [flag, `no-${flag}`] : [flag],
    );
    expect(new Set(flags).size).toBe(flags.length);
    for (const flag of flags) expect(Object.keys(OPTIONS ?? {}).filter((f) => f === flag)).toHaveLength(1);
    expect(Object.keys(OPTIONS ?? {})).toContain('model');
    for (const method of METHODS)
      for (const key of METHOD_LIST.find((d) => d.name === method)!.parameters) {
        const yamlKey = specOf(key).mergekit?.key;
        if (yamlKey)
          expect(specForYaml(method, yamlKey, specOf(key).scope === 'agent' ? 'agent' : undefined)).toBe(key);
      }
  });

  it('says the range in the messages of every path', () => {
    expect(rangeProblem(PARAM_SPECS.density, 1.5)).toBe('is outside (0, 1]');
    expect(rangeProblem(PARAM_SPECS.density, 0)).toBe('is outside (0, 1]');
    expect(rangeProblem(PARAM_SPECS.gamma, -0.1)).toBe('is outside [0, 1]');
    expect(rangeProblem(PARAM_SPECS.epsilon, -1)).toBe('must be ≥ 0');
    expect(rangeProblem(PARAM_SPECS.seed, 2 ** 32)).toBe('must be an integer in [0, 2^32)');
    expect(rangeProblem(PARAM_SPECS.lambda, Number.NaN)).toBe('must be a finite number');
    expect(rangeProblem(PARAM_SPECS.seed, 2 ** 32 - 1)).toBeUndefined();
    expect(validateParams({ ...defaultParams('ties', 2), density: [0.5, 1.5] }, 2)).toEqual([
      'density must be in (0, 1]',
    ]);
  });
});

describe('ranges, refused alike on every path', () => {
  const numeric = USER_PARAMS.filter((k) => ['number', 'integer'].includes(specOf(k).kind));

  it('the studio (validateParams) refuses each value outside a range and takes one inside', () => {
    const random = generator(7);
    for (const key of numeric) {
      const spec = specOf(key);
      const method = readerOf(key);
      const agents = agentsFor(method);
      const set = (v: number): MethodParams => {
        const params = defaultParams(method, agents);
        paramsRecord(params)[key] =
          spec.scope === 'agent' ? [inside(spec, random), v, inside(spec, random)] : v;
        return params;
      };
      expect(validateParams(set(inside(spec, random)), agents), key).toEqual([]);
      for (const bad of outside(spec)) {
        const problems = validateParams(set(bad), agents);
        expect(problems.length, `${key} = ${bad}`).toBe(1);
        expect(problems[0], `${key} = ${bad}`).toMatch(new RegExp(`^${key} `));
      }
    }
  });

  it('refuses a negative RAM+ strength r (issue 38: --r -5 merged with λ = −9)', () => {
    expect(validateParams({ ...defaultParams('ramplus', 2), r: -5 }, 2)).toEqual(['r must be ≥ 0']);
    expect(validateParams({ ...defaultParams('ramplus', 2), r: 0 }, 2)).toEqual([]);
  });

  it('refuses weights that vanish in f32 (issue 38: --weight 1e-320 wrote an all-zero model)', () => {
    const params = (weights: number[]): MethodParams => ({ ...defaultParams('linear', 2), weights });
    const problems = validateParams(params([1e-320, 1]), 2);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^weights 1e-320 \(agent 1\) is below f32's smallest normal 1\.18e-38/);
    expect(validateParams(params([1e-39, 2e-39]), 2)).toHaveLength(2);
    expect(validateParams(params([2 ** -126, 0]), 2)).toEqual([]);
  });

  it('a recipe refuses each value outside a range, globally, per model and in a gradient', () => {
    for (const key of numeric) {
      const spec = specOf(key);
      const yamlKey = spec.mergekit?.key;
      if (!yamlKey) continue;
      const method = readerOf(key);
      // Per-model values: a weight each, this parameter on the first model.
      const yaml = (value: string, where: 'global' | 'model'): string =>
        [
          `merge_method: ${method}`,
          'base_model: /m/base',
          ...(where === 'global' ? ['parameters:', `  ${yamlKey}: ${value}`] : []),
          'models:',
          '  - model: /m/a',
          '    parameters:',
          '      weight: 1',
          ...(where === 'model' && yamlKey !== 'weight' ? [`      ${yamlKey}: ${value}`] : []),
          ...(agentsFor(method) > 1 ? ['  - model: /m/b', '    parameters:', '      weight: 1'] : []),
        ].join('\n');
      const places: ('global' | 'model')[] = spec.scope === 'agent' ? ['global', 'model'] : ['global'];
      for (const where of places) {
        if (where === 'model' && yamlKey === 'weight') continue;
        const random = generator(11);
        expect(() => parseMergekitYaml(yaml(String(inside(spec, random)), where), 'r.yml')).not.toThrow();
        for (const bad of outside(spec).filter(Number.isFinite)) {
          const text = yaml(String(bad), where);
          expect(() => parseMergekitYaml(text, 'r.yml'), `${key} ${where} ${bad}`).toThrow(RecipeError);
          expect(() => parseMergekitYaml(text, 'r.yml'), `${key} ${where} ${bad}`).toThrow(/r\.yml/);
          if (spec.perTensor) {
            const gradient = yaml(`[${inside(spec, random)}, ${bad}]`, where);
            expect(() => parseMergekitYaml(gradient, 'r.yml'), `${key} gradient ${bad}`).toThrow(
              `${yamlKey}[1]: ${bad}`,
            );
          }
        }
      }
    }
  });

  it('the command line takes a flag’s value as given, and the merge’s check refuses it', () => {
    for (const { key, spec, flag } of PARAM_FLAGS) {
      if (spec.kind !== 'number' && spec.kind !== 'integer') continue;
      const method = readerOf(key);
      for (const bad of outside(spec).filter(Number.isFinite)) {
        const values = flagValues([`--${flag}=${bad}`]);
        const params = paramsFromFlags(values, method, AGENTS);
        expect(validateParams(params, AGENTS).join('; '), `--${flag} ${bad}`).toMatch(
          new RegExp(`\\b${key}\\b`),
        );
      }
    }
    expect(() => paramsFromFlags(flagValues(['--lambda', 'big']), 'ties', 2)).toThrow(
      '--lambda needs a number',
    );
    expect(() => paramsFromFlags(flagValues(['--rescale', 'l2']), 'dare_ties', 2)).toThrow(
      '--rescale must be density, l1 or none, not l2',
    );
  });

  it('a link refuses a seed outside u32 and a value of the wrong kind', () => {
    const link = (params: Record<string, unknown>): string =>
      JSON.stringify({
        v: 1,
        base: null,
        agents: [],
        outDtype: null,
        params: { ...defaultParams('dare_ties', 0), ...params },
      });
    expect(() => parseSessionRecipe(link({ seed: 2 ** 32 }))).toThrow(/params\.seed must be an integer/);
    expect(() => parseSessionRecipe(link({ rescale: 'l2' }))).toThrow(/params\.rescale/);
    expect(() => parseSessionRecipe(link({ normalize: 1 }))).toThrow(/params\.normalize/);
    expect(parseSessionRecipe(link({ rescale: 'l1' })).params.rescale).toBe('l1');
  });
});

function flagValues(argv: string[]): Values {
  return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }).values as Values;
}

/** The flags that give `params` (what PARAM_FLAGS would parse back to them). */
function flagsOf(params: MethodParams, method: MethodName): string[] {
  const record = paramsRecord(params);
  return PARAM_FLAGS.flatMap(({ key, spec, flag }) => {
    const value = record[key];
    if (value === undefined || !readsParam(method, key)) return [];
    if (spec.kind === 'boolean') return [value ? `--${flag}` : `--no-${flag}`];
    // --flag=value: a negative value would read as a flag of its own.
    if (Array.isArray(value)) return value.map((v) => `--${flag}=${v}`);
    return [`--${flag}=${String(value)}`];
  });
}

describe('round trips', () => {
  it('every method’s parameters → mergekit YAML → the same parameters', () => {
    const random = generator(2026);
    for (const method of METHODS) {
      for (let trial = 0; trial < 5; trial++) {
        const params = randomParams(method, random);
        const recipe: Recipe = {
          base: '/m/base',
          models: Array.from({ length: agentsFor(method) }, (_, t) => `/m/agent-${t}`),
          params,
        };
        const again = parseMergekitYaml(toMergekitYaml(recipe), 'again.yml').params;
        for (const key of METHOD_LIST.find((d) => d.name === method)!.parameters) {
          // The seed is merge-studio's own (mergekit draws its own): not written.
          if (specOf(key).mergekit?.write === false) continue;
          expect(paramsRecord(again)[key], `${method}.${key}`).toEqual(paramsRecord(params)[key]);
        }
      }
    }
  });

  it('every method’s parameters → generated flags → the same parameters', () => {
    const random = generator(99);
    for (const method of METHODS) {
      const params = randomParams(method, random);
      const parsed = paramsFromFlags(flagValues(flagsOf(params, method)), method, agentsFor(method));
      for (const key of METHOD_LIST.find((d) => d.name === method)!.parameters)
        expect(paramsRecord(parsed)[key], `${method} --${specOf(key).flag}`).toEqual(
          paramsRecord(params)[key],
        );
    }
  });

  it('a per-agent flag given once is every agent’s, and one given a wrong number of times is refused', () => {
    expect(paramsFromFlags(flagValues(['--gamma', '0.2']), 'breadcrumbs', 3).gamma).toEqual([0.2, 0.2, 0.2]);
    expect(() => paramsFromFlags(flagValues(['--density', '0.2', '--density', '0.3']), 'ties', 3)).toThrow(
      '--density was given 2 times for 3 --model',
    );
  });

  it('every method’s parameters → a link → the same parameters', () => {
    const random = generator(5);
    for (const method of METHODS) {
      const params = randomParams(method, random);
      const recipe = { base: 'base', agents: ['a', 'b', 'c'], params, outDtype: null };
      expect(parseSessionRecipe(serializeSessionRecipe(recipe)).params, method).toEqual(params);
    }
  });

  it('a recipe key that a method does not read and mergekit’s schema lacks is refused', () => {
    expect(recipeModelKeys('ties')).toEqual(['weight', 'density']);
    expect(recipeModelKeys('breadcrumbs')).toEqual(['weight', 'density', 'gamma']);
    const yaml =
      'merge_method: ties\nbase_model: /b\nparameters: { gamma: 0.1 }\nmodels:\n  - model: /a\n    parameters: { weight: 1 }\n';
    expect(() => parseMergekitYaml(yaml, 'r.yml')).toThrow('parameter "gamma" is not supported');
  });
});

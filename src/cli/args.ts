// Command-line flags shared by the merge-studio commands (each merge parameter's flag from its spec,
// src/methods/params.ts), and loading models from paths.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { readdir, stat } from 'node:fs/promises';
import { openModel, type Model } from '../format/model.ts';
import { nodeModelFiles } from '../io/node.ts';
import type { FloatDtype } from '../format/dtype.ts';
import { READ_DTYPE_FLAGS, type ReadDtype } from '../format/precision.ts';
import { defaultParams, paramsRecord } from '../methods/defaults.ts';
import { listed, specOf, USER_PARAMS, type ParameterKey, type ParamSpec } from '../methods/params.ts';
import type { MethodName, MethodParams } from '../methods/types.ts';

export class UsageError extends Error {
  override name = 'UsageError';
}

/** The commands' own flags; each merge parameter's flag comes from its spec (PARAM_OPTIONS). */
const COMMAND_OPTIONS = {
  json: { type: 'string' },
  base: { type: 'string' },
  model: { type: 'string', multiple: true },
  method: { type: 'string' },
  dtype: { type: 'string' },
  'read-dtype': { type: 'string' },
  'shard-size': { type: 'string' },
  out: { type: 'string' },
  stats: { type: 'string' },
  'stats-in': { type: 'string' },
  config: { type: 'string' },
  cpu: { type: 'boolean' },
  adapter: { type: 'boolean' },
  'window-elements': { type: 'string' },
  'memory-budget': { type: 'string' },
  episodes: { type: 'string' },
  probes: { type: 'string' },
  chat: { type: 'boolean' },
  'max-new-tokens': { type: 'string' },
  candidate: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} satisfies ParseArgsConfig['options'];

type FlagOption = { type: 'string'; multiple?: boolean } | { type: 'boolean' };

/** The parameters that have a flag, each with its spec. */
export const PARAM_FLAGS: { key: ParameterKey; spec: ParamSpec; flag: string }[] = USER_PARAMS.flatMap(
  (key) => {
    const spec = specOf(key);
    return spec.flag ? [{ key, spec, flag: spec.flag }] : [];
  },
);

/** Each parameter's flag: per-agent ones repeat, a boolean has --flag and --no-flag. */
export const PARAM_OPTIONS: Record<string, FlagOption> = Object.fromEntries(
  PARAM_FLAGS.flatMap(({ spec, flag }): [string, FlagOption][] =>
    spec.kind === 'boolean'
      ? [
          [flag, { type: 'boolean' }],
          [`no-${flag}`, { type: 'boolean' }],
        ]
      : [[flag, spec.scope === 'agent' ? { type: 'string', multiple: true } : { type: 'string' }]],
  ),
);

export const OPTIONS: ParseArgsConfig['options'] = { ...COMMAND_OPTIONS, ...PARAM_OPTIONS };

/** The parsed flags: the commands' own typed, the parameters' by their flag. */
export type Values = ReturnType<
  typeof parseArgs<{ options: typeof COMMAND_OPTIONS; allowPositionals: true }>
>['values'] & { readonly [flag: string]: string | boolean | string[] | undefined };

export function num(value: string | undefined, flag: string): number | undefined {
  return value === undefined ? undefined : numberOf(value, flag);
}

/** A flag's number, or a usage error naming the flag. */
function numberOf(value: string, flag: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n))
    throw new UsageError(`--${flag} needs a number, got "${value}"`);
  return n;
}

export const DTYPE_FLAGS: Record<string, FloatDtype> = { bf16: 'BF16', f16: 'F16', f32: 'F32' };

/** --read-dtype's read precision (SPEC.md "Inputs stored in other precisions"); undefined: the default. */
export function readDtypeFlag(values: Values): ReadDtype | undefined {
  const text = values['read-dtype'];
  if (text === undefined) return undefined;
  const dtype = READ_DTYPE_FLAGS[text];
  if (!dtype) throw new UsageError(`--read-dtype must be bf16, f16, f32 or stored, not ${text}`);
  return dtype;
}

export function perAgent(
  values: string[] | undefined,
  flag: string,
  agents: number,
  fallback: number[],
): number[] {
  if (!values || values.length === 0) return fallback;
  const numbers = values.map((v) => numberOf(v, flag));
  const [only] = numbers;
  if (numbers.length === 1 && only !== undefined) return Array.from({ length: agents }, () => only);
  if (numbers.length !== agents)
    throw new UsageError(
      `--${flag} was given ${numbers.length} times for ${agents} --model: give it once per model`,
    );
  return numbers;
}

/** Loads a model's headers; a failure names the model's path as well as the file. */
export async function loadModel(path: string): Promise<Model> {
  try {
    return await openModel(path, await nodeModelFiles(path));
  } catch (error) {
    const message = (error as Error).message;
    if (message.includes(path)) throw error;
    throw new Error(`model ${path}: ${message}`, { cause: error });
  }
}

export async function emptyOrMissing(dir: string): Promise<void> {
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) throw new UsageError(`--out ${dir} exists and is not a folder`);
    const entries = await readdir(dir);
    if (entries.length > 0)
      throw new UsageError(
        `--out ${dir} is not empty: choose a new folder, so no earlier model gets mixed in`,
      );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** How a flag is written in the help: --epsilon E, --weight W ..., --rescale density|l1|none. */
export function flagUsage(spec: ParamSpec, flag: string): string {
  if (spec.kind === 'boolean') return `--${flag}|--no-${flag}`;
  if (spec.kind === 'enum') return `--${flag} ${(spec.values ?? []).join('|')}`;
  return `--${flag} ${flag.charAt(0).toUpperCase()}${spec.scope === 'agent' ? ' ...' : ''}`;
}

/** The parameter a flag gives, read as its spec says; undefined where the flag is not given. */
function flagValue(
  values: Values,
  spec: ParamSpec,
  flag: string,
  agents: number,
  fallback: unknown,
): unknown {
  if (spec.kind === 'boolean') return values[flag] ? true : values[`no-${flag}`] ? false : undefined;
  const given = values[flag];
  if (given === undefined) return undefined;
  if (spec.scope === 'agent') {
    // A per-agent flag of an optional parameter the method does not read (no list of it) is ignored.
    if (!Array.isArray(fallback)) return undefined;
    return perAgent(given as string[], flag, agents, fallback as number[]);
  }
  const text = given as string;
  if (spec.kind === 'enum') {
    if ((spec.values ?? []).includes(text)) return text;
    throw new UsageError(`--${flag} must be ${listed(spec.values ?? [])}, not ${text}`);
  }
  return num(text, flag);
}

/**
 * The method's parameters from the flags, its defaults where a flag is not given. Ranges are checked
 * after, with the recipe's (validateParams), so every path refuses the same values.
 */
export function paramsFromFlags(values: Values, method: MethodName, agents: number): MethodParams {
  const params = defaultParams(method, agents);
  const record = paramsRecord(params);
  for (const { key, spec, flag } of PARAM_FLAGS) {
    const value = flagValue(values, spec, flag, agents, record[key]);
    if (value !== undefined) record[key] = value as number;
  }
  return params;
}

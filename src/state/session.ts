// The session's recipe as plain data that outlives the page: model labels and order, method, every
// parameter, ε, the read precision and the output dtype, saved in localStorage and shared as a URL fragment. It holds no
// path and no weight; whatever is read back is checked field by field, as it may come from a link.
import type { FloatDtype } from '../format/dtype.ts';
import type { ReadDtype } from '../format/precision.ts';
import { defaultParams, isMethod, paramsRecord, specForYaml } from '../methods/defaults.ts';
import { rangeProblem, specOf, USER_PARAMS, type ParamSpec } from '../methods/params.ts';
import type { Conditional, RecipeSettings, Setting } from '../methods/recipe.ts';
import type { MethodName, MethodParams } from '../methods/types.ts';

export interface SessionRecipe {
  /** The labels of the base and the agents, in merge order (names only: never paths). */
  base: string | null;
  agents: string[];
  params: MethodParams;
  outDtype: FloatDtype | null;
  /** A recipe's gradients and filters (mergekit keys), per agent and global; the scalars are in params. */
  gradients?: RecipeSettings;
  /** The read precision D ("compare at"); null: the default (absent in sessions saved before it). */
  readDtype?: ReadDtype | null;
}

export const SESSION_STORAGE_KEY = 'merge-studio.recipe.v1';
const FRAGMENT_KEY = 'recipe';
const VERSION = 1;
/** Bounds on what a link may carry, so a crafted one cannot make the page build huge lists. */
const MAX_AGENTS = 64;
const MAX_LABEL = 200;

export class SessionRecipeError extends Error {
  override name = 'SessionRecipeError';
}

const DTYPES: readonly FloatDtype[] = ['BF16', 'F16', 'F32'];

function finite(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new SessionRecipeError(`${what} must be a finite number, got ${JSON.stringify(value)}`);
  return value;
}

function numbers(value: unknown, what: string): number[] {
  if (!Array.isArray(value) || value.length > MAX_AGENTS)
    throw new SessionRecipeError(`${what} must be a list of at most ${MAX_AGENTS} numbers`);
  return value.map((v, i) => finite(v, `${what}[${i}]`));
}

function label(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_LABEL)
    throw new SessionRecipeError(`${what} must be a name of 1 to ${MAX_LABEL} characters`);
  // A label is a folder or file name, never a path.
  if (/[/\\]/.test(value)) throw new SessionRecipeError(`${what} must be a name, not a path: ${value}`);
  return value;
}

/** One parameter's value as its spec says (a list of at most MAX_AGENTS for a per-agent one). */
function paramValue(spec: ParamSpec, value: unknown, what: string): unknown {
  if (spec.kind === 'boolean') {
    if (typeof value !== 'boolean') throw new SessionRecipeError(`${what} must be true or false`);
    return value;
  }
  if (spec.kind === 'enum') {
    if (!(spec.values ?? []).includes(value as string))
      throw new SessionRecipeError(`${what} must be one of ${(spec.values ?? []).join(', ')}`);
    return value;
  }
  if (spec.scope === 'agent') return numbers(value, what);
  const number = finite(value, what);
  // Integers are checked whole (a seed beyond u32 would wrap); other ranges are the studio's to show.
  const problem = spec.kind === 'integer' ? rangeProblem(spec, number) : undefined;
  if (problem) throw new SessionRecipeError(`${what} ${problem}, got ${number}`);
  return number;
}

/** Bounds on a gradient's points and a filter list's entries a link may carry. */
const MAX_POINTS = 1024;
const MAX_FILTER = 200;

/** One gradient or filter list of a mergekit key, checked as the YAML reader checks it. */
function setting(method: MethodName, key: string, value: unknown, what: string): Setting {
  const param = specForYaml(method, key);
  if (!param) throw new SessionRecipeError(`${what}: ${method} has no parameter ${JSON.stringify(key)}`);
  const spec = specOf(param);
  const point = (v: unknown, at: string): number => {
    const n = finite(v, at);
    const problem = rangeProblem(spec, n);
    if (problem) throw new SessionRecipeError(`${at} ${problem}, got ${n}`);
    return n;
  };
  const gradient = (v: unknown, at: string): number[] => {
    if (!Array.isArray(v) || v.length === 0 || v.length > MAX_POINTS)
      throw new SessionRecipeError(`${at} must be a list of 1 to ${MAX_POINTS} numbers`);
    return v.map((p, i) => point(p, `${at}[${i}]`));
  };
  if (!Array.isArray(value)) throw new SessionRecipeError(`${what} must be a gradient or a filter list`);
  if (value.every((v) => typeof v === 'number')) return gradient(value, what);
  if (value.length > MAX_AGENTS) throw new SessionRecipeError(`${what} has more than ${MAX_AGENTS} filters`);
  return value.map((entry: unknown, i): Conditional => {
    const at = `${what}[${i}]`;
    if (typeof entry !== 'object' || entry === null)
      throw new SessionRecipeError(`${at} must be { filter, value }`);
    const { filter, value: v } = entry as Record<string, unknown>;
    if (filter !== undefined && (typeof filter !== 'string' || filter.length > MAX_FILTER))
      throw new SessionRecipeError(`${at}.filter must be text of at most ${MAX_FILTER} characters`);
    const checked = Array.isArray(v) ? gradient(v, `${at}.value`) : point(v, `${at}.value`);
    return filter === undefined ? { value: checked } : { filter, value: checked };
  });
}

function settings(method: MethodName, value: unknown, what: string): Record<string, Setting> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SessionRecipeError(`${what} must be an object`);
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [key, setting(method, key, v, `${what}.${key}`)]),
  );
}

function gradients(method: MethodName, value: unknown): RecipeSettings {
  const doc = value as { global?: unknown; models?: unknown } | null;
  if (typeof doc !== 'object' || doc === null) throw new SessionRecipeError('gradients must be an object');
  if (!Array.isArray(doc.models) || doc.models.length > MAX_AGENTS)
    throw new SessionRecipeError(`gradients.models must be a list of at most ${MAX_AGENTS}`);
  return {
    global: settings(method, doc.global ?? {}, 'gradients.global'),
    models: doc.models.map((m, i) => settings(method, m, `gradients.models[${i}]`)),
  };
}

/** Checks a decoded recipe field by field; throws a SessionRecipeError naming the bad field. */
export function checkSessionRecipe(value: unknown): SessionRecipe {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SessionRecipeError('the recipe must be an object');
  const doc = value as Record<string, unknown>;
  if (doc.v !== VERSION) throw new SessionRecipeError(`unknown recipe version ${JSON.stringify(doc.v)}`);
  const p = doc.params as Record<string, unknown> | undefined;
  if (typeof p !== 'object' || p === null) throw new SessionRecipeError('the recipe has no params');
  if (typeof p.method !== 'string' || !isMethod(p.method))
    throw new SessionRecipeError(`unknown method ${JSON.stringify(p.method)}`);
  const params: MethodParams = defaultParams(p.method, 0);
  for (const key of USER_PARAMS) {
    const spec = specOf(key);
    if (p[key] === undefined && spec.optional) continue;
    paramsRecord(params)[key] = paramValue(spec, p[key], `params.${key}`) as number;
  }
  const outDtype = doc.outDtype ?? null;
  if (outDtype !== null && !DTYPES.includes(outDtype as FloatDtype))
    throw new SessionRecipeError(`unknown output dtype ${JSON.stringify(outDtype)}`);
  const readDtype = doc.readDtype ?? null;
  if (readDtype !== null && readDtype !== 'stored' && !DTYPES.includes(readDtype as FloatDtype))
    throw new SessionRecipeError(`unknown read precision ${JSON.stringify(readDtype)}`);
  if (!Array.isArray(doc.agents) || doc.agents.length > MAX_AGENTS)
    throw new SessionRecipeError(`agents must be a list of at most ${MAX_AGENTS} names`);
  return {
    base: doc.base === null || doc.base === undefined ? null : label(doc.base, 'base'),
    agents: doc.agents.map((a, i) => label(a, `agents[${i}]`)),
    params,
    outDtype: outDtype as FloatDtype | null,
    ...(doc.gradients === undefined ? {} : { gradients: gradients(p.method, doc.gradients) }),
    // Absent in sessions saved before read precisions: the studio's stays as it is.
    ...(doc.readDtype !== undefined ? { readDtype: readDtype as ReadDtype | null } : {}),
  };
}

export function serializeSessionRecipe(recipe: SessionRecipe): string {
  return JSON.stringify({ v: VERSION, ...recipe });
}

export function parseSessionRecipe(text: string): SessionRecipe {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new SessionRecipeError('the recipe is not valid JSON');
  }
  return checkSessionRecipe(value);
}

function toBase64Url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text: string): string {
  const padded = text.replace(/-/g, '+').replace(/_/g, '/');
  let binary: string;
  try {
    binary = atob(padded + '='.repeat((4 - (padded.length % 4)) % 4));
  } catch {
    throw new SessionRecipeError('the link’s recipe is not valid base64url');
  }
  return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
}

/** The fragment (without '#') that carries a recipe in a link. */
export function recipeFragment(recipe: SessionRecipe): string {
  return `${FRAGMENT_KEY}=${toBase64Url(serializeSessionRecipe(recipe))}`;
}

/** The recipe in a location hash, null when the hash carries none; throws when it carries a bad one. */
export function recipeFromFragment(hash: string): SessionRecipe | null {
  const fields = new URLSearchParams(hash.replace(/^#/, ''));
  const encoded = fields.get(FRAGMENT_KEY);
  if (encoded === null) return null;
  return parseSessionRecipe(fromBase64Url(encoded));
}

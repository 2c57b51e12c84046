// Command-line flags shared by the merge-studio commands, and loading models from paths.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { readdir, stat } from 'node:fs/promises';
import { openModel, type Model } from '../format/model.ts';
import { nodeModelFiles } from '../io/node.ts';
import type { FloatDtype } from '../format/dtype.ts';

export class UsageError extends Error {
  override name = 'UsageError';
}

export const OPTIONS = {
  json: { type: 'string' },
  base: { type: 'string' },
  model: { type: 'string', multiple: true },
  method: { type: 'string' },
  epsilon: { type: 'string' },
  r: { type: 'string' },
  alpha: { type: 'string' },
  lambda: { type: 'string' },
  density: { type: 'string', multiple: true },
  gamma: { type: 'string', multiple: true },
  weight: { type: 'string', multiple: true },
  seed: { type: 'string' },
  rescale: { type: 'string' },
  normalize: { type: 'boolean' },
  'no-normalize': { type: 'boolean' },
  dtype: { type: 'string' },
  'shard-size': { type: 'string' },
  out: { type: 'string' },
  stats: { type: 'string' },
  'stats-in': { type: 'string' },
  config: { type: 'string' },
  cpu: { type: 'boolean' },
  'window-elements': { type: 'string' },
  'memory-budget': { type: 'string' },
  episodes: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

export type Values = ReturnType<
  typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>
>['values'];

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

// Agents from command-line paths and recipes: a model folder or file, a PEFT LoRA adapter folder (or
// one adapter weights file beside its adapter_config.json) over the base, or mergekit's
// `BASE+ADAPTER` (the adapter over that base). Adapter agents compute their τ with the engine's
// low-rank product once the engine exists (driver/adapter-model.ts).
import { existsSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { isAdapterFolder, openAdapterAgent } from '../driver/adapter-model.ts';
import type { MergeEngine } from '../engine/contract.ts';
import type { Model } from '../format/model.ts';
import { ADAPTER_CONFIG } from '../format/peft.ts';
import { nodeModelFiles } from '../io/node.ts';
import type { ModelFile } from '../io/source.ts';
import { lowRankF32, type LowRankProduct } from '../methods/lora.ts';
import { loadModel } from './args.ts';

/** The product adapter agents use: the engine's once it is made (GPU), else the CPU's. */
export class Products {
  engine: MergeEngine | undefined;
  readonly get = (): LowRankProduct => this.engine?.product ?? lowRankF32;
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * The files of an adapter at `path` (a folder, or a weights file beside adapter_config.json) and the
 * folder they are in, or null.
 */
async function adapterFiles(path: string): Promise<{ files: ModelFile[]; folder: string } | null> {
  const files = await nodeModelFiles(path);
  if (isAdapterFolder(files)) return { files, folder: path };
  const config = join(dirname(path), ADAPTER_CONFIG);
  if (files.length === 1 && path.endsWith('.safetensors') && (await exists(config)))
    return { files: [...files, ...(await nodeModelFiles(config))], folder: dirname(path) };
  return null;
}

/** `BASE+ADAPTER` split where both parts exist, else null (a path may hold a "+" of its own). */
async function basePlusAdapter(path: string): Promise<[string, string] | null> {
  if (await exists(path)) return null;
  for (let i = path.indexOf('+'); i > 0; i = path.indexOf('+', i + 1)) {
    const [left, right] = [path.slice(0, i), path.slice(i + 1)];
    if ((await exists(left)) && (await exists(right))) return [left, right];
  }
  return null;
}

/**
 * The agent at `path` over `base` (loaded from `base.path`), and the path its files are under (for
 * modelFilePaths); its notes (an adapter trained on another base name) go to `note`.
 */
export async function loadAgent(
  path: string,
  base: { model: Model; path: string },
  products: Products,
  note: (line: string) => void,
): Promise<{ model: Model; path: string }> {
  const split = await basePlusAdapter(path);
  const [ownBasePath, adapterPath] = split ?? [base.path, path];
  const found = await adapterFiles(adapterPath).catch(() => null);
  if (!found) {
    if (split) throw new Error(`${path}: ${adapterPath} is not a PEFT adapter folder (no ${ADAPTER_CONFIG})`);
    return { model: await loadModel(path), path };
  }
  const ownBase = resolve(ownBasePath) === resolve(base.path) ? base.model : await loadModel(ownBasePath);
  try {
    const agent = await openAdapterAgent(path, found.files, ownBase, {
      product: products.get,
      baseNames: [basename(resolve(ownBasePath))],
    });
    for (const warning of agent.warnings) note(warning);
    return { model: agent, path: found.folder };
  } catch (error) {
    const message = (error as Error).message;
    if (message.includes(path)) throw error;
    throw new Error(`model ${path}: ${message}`, { cause: error });
  }
}

/** A model path made absolute for the written recipe, each side of mergekit's BASE+ADAPTER alike. */
export function resolveModelRef(path: string): string {
  if (existsSync(path)) return resolve(path);
  for (let i = path.indexOf('+'); i > 0; i = path.indexOf('+', i + 1)) {
    const [left, right] = [path.slice(0, i), path.slice(i + 1)];
    if (existsSync(left) && existsSync(right)) return `${resolve(left)}+${resolve(right)}`;
  }
  return resolve(path);
}

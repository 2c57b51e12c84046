// Test fixtures: small model folders written to disk or memory, built in code with the project's
// own writer (and checked elsewhere against files written by other tools).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeFloats, type Dtype, type FloatDtype } from '../format/dtype.ts';
import { indexJson, planShards } from '../format/sharded.ts';
import { serializeSafetensors, type TensorSpec } from '../format/write.ts';
import { openModel, type Model } from '../format/model.ts';
import { memorySource } from '../io/source.ts';

export interface FixtureTensor extends TensorSpec {
  data: Uint8Array;
}

export function floatTensor(
  name: string,
  dtype: FloatDtype,
  shape: number[],
  values: ArrayLike<number>,
): FixtureTensor {
  return { name, dtype, shape, data: encodeFloats(dtype, values) };
}

export function rawTensor(name: string, dtype: Dtype, shape: number[], data: Uint8Array): FixtureTensor {
  return { name, dtype, shape, data };
}

export interface FolderOptions {
  shardBytes?: number;
  config?: Record<string, unknown>;
  extraFiles?: Record<string, string>;
}

/** The files of a model folder, in memory: one model.safetensors, or shards and an index when shardBytes is given. */
export function modelFolderFiles(
  tensors: FixtureTensor[],
  options: FolderOptions = {},
): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  const byName = new Map(tensors.map((t) => [t.name, t]));
  if (options.shardBytes === undefined) {
    files.set('model.safetensors', serializeSafetensors(tensors, { format: 'pt' }));
  } else {
    const plan = planShards(tensors, options.shardBytes);
    for (const shard of plan.shards)
      files.set(
        shard.file,
        serializeSafetensors(
          shard.tensors.map((t) => byName.get(t.name)!),
          { format: 'pt' },
        ),
      );
    if (plan.shards.length > 1)
      files.set('model.safetensors.index.json', new TextEncoder().encode(indexJson(plan)));
  }
  const text = new TextEncoder();
  if (options.config) files.set('config.json', text.encode(JSON.stringify(options.config, null, 2)));
  for (const [name, content] of Object.entries(options.extraFiles ?? {}))
    files.set(name, text.encode(content));
  return files;
}

/** An opened in-memory model. */
export function memoryModel(
  name: string,
  tensors: FixtureTensor[],
  options: FolderOptions = {},
): Promise<Model> {
  const files = [...modelFolderFiles(tensors, options)].map(([file, bytes]) => ({
    name: file,
    source: memorySource(file, bytes),
  }));
  return openModel(name, files);
}

/** Writes a model folder to disk (see modelFolderFiles). */
export async function writeModelFolder(
  dir: string,
  tensors: FixtureTensor[],
  options: FolderOptions = {},
): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const [file, bytes] of modelFolderFiles(tensors, options)) await writeFile(join(dir, file), bytes);
  return dir;
}

/** A seeded generator of floats in [0, 1) for test inputs (the bench generators share it). */
export { floatStream as rng } from '../demo/rng.ts';

/** The SPEC.md worked example: base all zeros, three agents, one 3×3 tensor. */
export const WORKED_EXAMPLE = {
  base: [0, 0, 0, 0, 0, 0, 0, 0, 0],
  agents: {
    coding: [0, 0.3, 0, 0.6, 0.7, 0, 0.1, 0, 0],
    tool: [0, 0.7, 0, 0.5, 0.8, 0.2, 0, 0, 0],
    memory: [0, 0.5, 0, 0.4, 0.9, 0, 0, 0, 0.1],
  },
  ram: [0, 0.5, 0, 0.5, 0.8, 0.2, 0.1, 0, 0.1],
  ramplus: [0, 0.5, 0, 0.5, 0.8, 0.24, 0.12, 0, 0.12],
} as const;

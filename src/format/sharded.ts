// Sharded checkpoints: splitting tensors over model-0000i-of-0000n.safetensors files, writing the
// model.safetensors.index.json that maps them, and reading an index without trusting its paths.

import { checkFileName } from '../io/sink.ts';
import { must } from '../io/checked.ts';
import { SafetensorsError } from '../io/errors.ts';
import { JsonSyntaxError, parseJson } from './json.ts';
import { checkSpecs, compareNames, compareSpecs, type TensorSpec } from './write.ts';

export interface ShardPlan {
  /** `bytes` counts tensor data only, as the index's total_size does (headers excluded). */
  shards: { file: string; tensors: TensorSpec[]; bytes: number }[];
  totalSize: number;
}

export const INDEX_FILE = 'model.safetensors.index.json';
export const SINGLE_FILE = 'model.safetensors';
/** The Hugging Face default shard budget. */
export const DEFAULT_MAX_SHARD_BYTES = 5_000_000_000;

export function shardFileName(index: number, count: number): string {
  const pad = (i: number): string => String(i).padStart(5, '0');
  return `model-${pad(index + 1)}-of-${pad(count)}.safetensors`;
}

/**
 * Fills shards in layout order up to `maxShardBytes` of tensor data each; a tensor larger than the
 * budget gets a shard of its own. One shard is named model.safetensors.
 */
export function planShards(tensors: TensorSpec[], maxShardBytes: number): ShardPlan {
  if (!(maxShardBytes > 0)) throw new RangeError(`shard budget must be positive, got ${maxShardBytes}`);
  const bytes = checkSpecs(SINGLE_FILE, tensors);
  const groups: { tensors: TensorSpec[]; bytes: number }[] = [];
  let current: { tensors: TensorSpec[]; bytes: number } | undefined;
  for (const spec of [...tensors].sort(compareSpecs)) {
    const size = must(bytes.get(spec.name), `byte size of ${spec.name}`);
    if (!current || (current.tensors.length > 0 && current.bytes + size > maxShardBytes)) {
      current = { tensors: [], bytes: 0 };
      groups.push(current);
    }
    current.tensors.push(spec);
    current.bytes += size;
  }
  if (groups.length === 0) groups.push({ tensors: [], bytes: 0 });
  const shards = groups.map((group, i) => ({
    file: groups.length === 1 ? SINGLE_FILE : shardFileName(i, groups.length),
    tensors: group.tensors,
    bytes: group.bytes,
  }));
  return { shards, totalSize: shards.reduce((sum, shard) => sum + shard.bytes, 0) };
}

/** The index as Hugging Face writes it (2-space indent), weight_map keys sorted; our total_size wins. */
export function indexJson(plan: ShardPlan, metadata: Record<string, unknown> = {}): string {
  const extra = Object.keys(metadata)
    .filter((key) => key !== 'total_size')
    .sort(compareNames);
  const meta: Record<string, unknown> = { total_size: plan.totalSize };
  for (const key of extra) meta[key] = metadata[key];
  const entries: [string, string][] = plan.shards.flatMap((shard) =>
    shard.tensors.map((t): [string, string] => [t.name, shard.file]),
  );
  entries.sort((a, b) => compareNames(a[0], b[0]));
  const weightMap: Record<string, string> = {};
  for (const [name, file] of entries) {
    Object.defineProperty(weightMap, name, {
      value: file,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return `${JSON.stringify({ metadata: meta, weight_map: weightMap }, null, 2)}\n`;
}

/** Shard names in an index must be plain `*.safetensors` names inside the model folder. */
export function checkShardName(file: string, shard: string): void {
  checkFileName(file, shard);
  if (!shard.toLowerCase().endsWith('.safetensors') || shard.length === '.safetensors'.length) {
    throw new SafetensorsError(
      'UnsafePath',
      file,
      `refusing the shard name ${JSON.stringify(shard)}: shards must be *.safetensors files in the model folder.`,
    );
  }
}

/** Parses an index strictly (duplicate keys rejected); every shard name is checked before use. */
export function parseIndex(
  file: string,
  text: string,
): { totalSize?: number; weightMap: Map<string, string> } {
  const invalid = (detail: string, cause?: unknown): SafetensorsError =>
    new SafetensorsError(
      'InvalidIndex',
      file,
      `${detail} Get the index again, or remove it if the folder holds one model.safetensors.`,
      {
        cause,
      },
    );
  let json: unknown;
  try {
    json = parseJson(text);
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    throw invalid(`is not valid JSON: ${error.message}.`, error);
  }
  if (!isObject(json)) throw invalid('is not a JSON object.');
  const { metadata, weight_map: weightMap } = json;
  let totalSize: number | undefined;
  if (metadata !== undefined && metadata !== null) {
    if (!isObject(metadata)) throw invalid('"metadata" is not an object.');
    const size = metadata.total_size;
    if (size !== undefined) {
      if (typeof size !== 'number' || !Number.isFinite(size) || size < 0) {
        throw invalid('"metadata.total_size" is not a non-negative number.');
      }
      totalSize = size;
    }
  }
  if (!isObject(weightMap)) throw invalid('"weight_map" is missing or not an object.');
  const map = new Map<string, string>();
  for (const [tensor, shard] of Object.entries(weightMap)) {
    if (typeof shard !== 'string')
      throw invalid(`"weight_map" entry ${JSON.stringify(tensor)} is not a file name.`);
    checkShardName(file, shard);
    map.set(tensor, shard);
  }
  return totalSize === undefined ? { weightMap: map } : { totalSize, weightMap: map };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

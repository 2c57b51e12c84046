// Opens a model from the files of a folder (or dropped files): finds its weights, cross-checks a
// sharded index against every shard header, and reads config.json — all before any tensor data.

import type { ByteSource, ModelFile } from '../io/source.ts';
import { at, must } from '../io/checked.ts';
import { asReadFailed, SafetensorsError } from '../io/errors.ts';
import { JsonSyntaxError, parseJson } from './json.ts';
import { readSafetensorsHeader, type SafetensorsHeader, type TensorInfo } from './safetensors.ts';
import { parseIndex } from './sharded.ts';
import { compareNames } from './write.ts';

export interface ModelTensor extends TensorInfo {
  /** The shard file that holds it. */
  file: string;
  /** Absolute byte offset in that file: dataStart + begin. */
  offset: number;
}

export interface Model {
  name: string;
  files: ModelFile[];
  /** One header per weights file: shards in name order, or the single file. */
  shards: SafetensorsHeader[];
  /** Sorted by name. */
  tensors: ReadonlyMap<string, ModelTensor>;
  config?: Record<string, unknown>;
  configText?: string;
  sharded: boolean;
  warnings: string[];
  source(file: string): ByteSource;
  /** Sum of tensor data bytes (headers excluded). */
  totalBytes: number;
}

const INDEX_SUFFIX = '.safetensors.index.json';
const CONFIG_FILE = 'config.json';
const MAX_INDEX_BYTES = 256 * 1024 * 1024;
const MAX_CONFIG_BYTES = 16 * 1024 * 1024;
const PICKLE = /\.(?:bin|pt|pth|ckpt)$/i;
const SHARD_NAME = /-\d{5}-of-\d{5}\.safetensors$/i;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export async function openModel(name: string, files: ModelFile[]): Promise<Model> {
  const byName = new Map<string, ModelFile>();
  for (const file of files) {
    if (byName.has(file.name)) {
      throw new SafetensorsError(
        'AmbiguousModel',
        name,
        `two files are named ${JSON.stringify(file.name)}. Choose the files of one model folder.`,
      );
    }
    byName.set(file.name, file);
  }
  const names = [...byName.keys()].sort(compareNames);
  const warnings: string[] = [];
  const indexes = names.filter((file) => file.endsWith(INDEX_SUFFIX));
  if (indexes.length > 1) {
    throw new SafetensorsError(
      'AmbiguousModel',
      name,
      `holds several indexes (${indexes.join(', ')}). Keep the one index of the model you mean.`,
    );
  }
  const weights = names.filter((file) => file.toLowerCase().endsWith('.safetensors'));
  const pickles = names.filter((file) => PICKLE.test(file));
  let shards: SafetensorsHeader[];
  const indexName = indexes[0];
  if (indexName !== undefined) {
    shards = await openSharded(name, indexName, byName, weights, warnings);
  } else {
    const file = singleWeightsFile(name, names, weights, pickles);
    shards = [await readHeader(must(byName.get(file), `picked file ${file}`))];
  }
  if (pickles.length > 0) {
    warnings.push(
      `ignored ${pickles.join(', ')}: PyTorch pickles are never loaded; the safetensors weights are used.`,
    );
  }
  const tensors = collectTensors(shards);
  let totalBytes = 0;
  for (const tensor of tensors.values()) totalBytes += tensor.end - tensor.begin;
  const model: Model = {
    name,
    files,
    shards,
    tensors,
    sharded: indexName !== undefined,
    warnings,
    totalBytes,
    source(file) {
      const found = byName.get(file);
      if (!found) throw new SafetensorsError('ReadFailed', file, `is not one of the files of ${name}.`);
      return found.source;
    },
  };
  const configFile = byName.get(CONFIG_FILE);
  if (configFile) {
    const { config, text } = await readConfig(configFile);
    model.config = config;
    model.configText = text;
  }
  return model;
}

/** Without an index: exactly one *.safetensors file, whatever its name. */
function singleWeightsFile(model: string, names: string[], weights: string[], pickles: string[]): string {
  const [only, ...others] = weights;
  if (only !== undefined && others.length === 0) return only;
  if (weights.length > 1) {
    const shardLike = weights.some((file) => SHARD_NAME.test(file));
    const hint = shardLike
      ? ' They look like shards: the index (model.safetensors.index.json) is missing; add it.'
      : ' Keep only the weights of the model you mean, or add its index.';
    throw new SafetensorsError(
      'AmbiguousModel',
      model,
      `holds ${weights.length} .safetensors files (${weights.join(', ')}) and no index, so which are the model is unclear.${hint}`,
    );
  }
  if (pickles.length > 0) {
    throw new SafetensorsError(
      'PickleRefused',
      model,
      `holds only PyTorch pickles (${pickles.join(', ')}). PyTorch pickles can run code; convert to safetensors with \`safetensors.torch.save_file(torch.load(path, weights_only=True), "model.safetensors")\` or Hugging Face's convert space, then open the result.`,
    );
  }
  const listed = names.length === 0 ? 'no files' : `only ${names.join(', ')}`;
  throw new SafetensorsError(
    'NoWeights',
    model,
    `holds ${listed}: no .safetensors weights. Choose the folder (or file) with the model's weights.`,
  );
}

async function openSharded(
  model: string,
  indexName: string,
  byName: Map<string, ModelFile>,
  weights: string[],
  warnings: string[],
): Promise<SafetensorsHeader[]> {
  const index = parseIndex(
    indexName,
    await readText(must(byName.get(indexName), `picked file ${indexName}`), MAX_INDEX_BYTES, 'InvalidIndex'),
  );
  const shardNames = [...new Set(index.weightMap.values())].sort(compareNames);
  if (shardNames.length === 0) {
    throw new SafetensorsError(
      'InvalidIndex',
      indexName,
      'names no shards (its weight_map is empty). Get the index again.',
    );
  }
  const single = indexName.slice(0, -'.index.json'.length);
  if (byName.has(single) && !shardNames.includes(single)) {
    throw new SafetensorsError(
      'AmbiguousModel',
      model,
      `holds both ${indexName} (${shardNames.length} shards) and ${single}, so which is the model is unclear. Remove the stale one.`,
    );
  }
  const unreferenced = weights.filter((file) => !shardNames.includes(file));
  // A shard-named file the index leaves out means a stale index, not an unrelated file.
  const strays = unreferenced.filter((file) => SHARD_NAME.test(file));
  for (const header of await Promise.all(
    strays.map((file) => readHeader(must(byName.get(file), `picked file ${file}`))),
  )) {
    const first = header.tensors[0];
    if (first) {
      throw new SafetensorsError(
        'TensorNotInIndex',
        header.file,
        `is in a shard that ${indexName} does not name: the index is stale. Get the index again.`,
        { tensor: first.name },
      );
    }
  }
  if (unreferenced.length > 0) {
    warnings.push(`ignored ${unreferenced.join(', ')}: not named by ${indexName}.`);
  }
  const missing = shardNames.filter((file) => !byName.has(file));
  if (missing.length > 0) {
    throw new SafetensorsError(
      'MissingShard',
      indexName,
      `names ${missing.length} of its ${shardNames.length} shards that are not here: ${missing.join(', ')}. Download the missing shards into the folder.`,
    );
  }
  const headers = await Promise.all(
    shardNames.map((file) => readHeader(must(byName.get(file), `picked file ${file}`))),
  );
  const owner = new Map<string, string>();
  for (const header of headers) {
    for (const tensor of header.tensors) {
      const other = owner.get(tensor.name);
      if (other !== undefined) {
        throw new SafetensorsError(
          'DuplicateTensor',
          header.file,
          `is also in ${other}: the same tensor in two shards means the folder mixes two exports. Get the model again.`,
          { tensor: tensor.name },
        );
      }
      owner.set(tensor.name, header.file);
    }
  }
  for (const [tensor, shard] of index.weightMap) {
    if (owner.get(tensor) !== shard) {
      throw new SafetensorsError(
        'TensorNotInShard',
        shard,
        `${indexName} puts this tensor here but the shard's header does not have it: the index is stale or the shard is from another export. Get both again.`,
        { tensor },
      );
    }
  }
  for (const [tensor, shard] of owner) {
    if (!index.weightMap.has(tensor)) {
      throw new SafetensorsError(
        'TensorNotInIndex',
        shard,
        `is in the shard but not in ${indexName}'s weight_map: the index is stale. Get the index again.`,
        { tensor },
      );
    }
  }
  if (index.totalSize !== undefined) {
    const actual = headers.reduce((sum, h) => sum + h.tensors.reduce((s, t) => s + t.end - t.begin, 0), 0);
    if (actual !== index.totalSize) {
      warnings.push(
        `${indexName} says total_size ${index.totalSize} but the shards hold ${actual} bytes of tensors; the shard headers are used.`,
      );
    }
  }
  return headers;
}

function collectTensors(shards: SafetensorsHeader[]): ReadonlyMap<string, ModelTensor> {
  const all: ModelTensor[] = [];
  for (const header of shards) {
    // A literal, not a spread: spreading 300k tensors cost seconds in the profile.
    for (const { name, dtype, shape, begin, end } of header.tensors)
      all.push({ name, dtype, shape, begin, end, file: header.file, offset: header.dataStart + begin });
  }
  // Writers put a single-dtype model's names in order already: one pass tells, and no sort is needed.
  let sorted = true;
  for (let i = 1; i < all.length && sorted; i++)
    sorted = compareNames(at(all, i - 1, 'tensor').name, at(all, i, 'tensor').name) < 0;
  if (!sorted) all.sort((a, b) => compareNames(a.name, b.name));
  return new SortedTensors(all);
}

/**
 * The model's tensors in name order, found by binary search: a Map of 300,000 names took longer to
 * build than the header took to parse, for a check that looks up a few of them. Names are distinct
 * (a header and a sharded index refuse duplicates).
 */
class SortedTensors implements ReadonlyMap<string, ModelTensor> {
  /** The names in order, made on the first keys(): a generator per name cost more than the array. */
  private names?: string[];

  constructor(private readonly list: readonly ModelTensor[]) {}

  get size(): number {
    return this.list.length;
  }

  get(name: string): ModelTensor | undefined {
    let low = 0;
    let high = this.list.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const tensor = at(this.list, middle, 'tensor');
      const order = compareNames(tensor.name, name);
      if (order === 0) return tensor;
      if (order < 0) low = middle + 1;
      else high = middle - 1;
    }
    return undefined;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  forEach(
    callback: (value: ModelTensor, key: string, map: ReadonlyMap<string, ModelTensor>) => void,
    thisArg?: unknown,
  ): void {
    for (const tensor of this.list) callback.call(thisArg, tensor, tensor.name, this);
  }

  keys(): MapIterator<string> {
    this.names ??= this.list.map((tensor) => tensor.name);
    return this.names.values();
  }

  values(): MapIterator<ModelTensor> {
    return this.list.values();
  }

  *entries(): MapIterator<[string, ModelTensor]> {
    for (const tensor of this.list) yield [tensor.name, tensor];
  }

  [Symbol.iterator](): MapIterator<[string, ModelTensor]> {
    return this.entries();
  }
}

async function readHeader(file: ModelFile): Promise<SafetensorsHeader> {
  const source = file.source.name === file.name ? file.source : renamed(file.source, file.name);
  return readSafetensorsHeader(source);
}

/** Errors and headers name the file as the model folder knows it, whatever the source calls itself. */
function renamed(source: ByteSource, name: string): ByteSource {
  return { name, size: source.size, read: (offset, length, into) => source.read(offset, length, into) };
}

async function readText(
  file: ModelFile,
  limit: number,
  code: 'InvalidIndex' | 'InvalidHeaderDeserialization',
): Promise<string> {
  const size = file.source.size;
  if (size > limit) {
    throw new SafetensorsError(
      code,
      file.name,
      `is ${size} bytes, more than the ${limit} accepted for this file.`,
    );
  }
  let bytes: Uint8Array;
  try {
    bytes = await file.source.read(0, size);
  } catch (error) {
    throw asReadFailed(file.name, error, 'the file');
  }
  try {
    return utf8.decode(bytes);
  } catch (error) {
    throw new SafetensorsError(code, file.name, 'is not valid UTF-8 text. Get the file again.', {
      cause: error,
    });
  }
}

async function readConfig(file: ModelFile): Promise<{ config: Record<string, unknown>; text: string }> {
  const text = await readText(file, MAX_CONFIG_BYTES, 'InvalidHeaderDeserialization');
  let config: unknown;
  try {
    config = parseJson(text);
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    throw new SafetensorsError(
      'InvalidHeaderDeserialization',
      file.name,
      `is not valid JSON: ${error.message}. Fix it or copy it again from the model's source.`,
      { cause: error },
    );
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new SafetensorsError(
      'InvalidHeaderDeserialization',
      file.name,
      "is not a JSON object. Fix it or copy it again from the model's source.",
    );
  }
  return { config: config as Record<string, unknown>, text };
}

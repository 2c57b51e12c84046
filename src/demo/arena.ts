// The arena: scores any model of the demo architecture (a base, an agent or a merge) on every task
// over a fixed, seeded set of episodes with the greedy policy, so that Node and the browser agree.
//
// Why greedy: argmax of logits needs only +, × and comparisons, which IEEE 754 fixes exactly, so the
// score does not depend on an engine's Math.exp; sampling would. Ties go to the lowest action.

import { bf16ToF32, f16ToF32, type Dtype } from '../format/dtype.ts';
import { numel, parseSafetensorsHeader } from '../format/safetensors.ts';
import type { Model } from '../format/model.ts';
import { createEpisode, isTaskName, observe, step, TASKS, type TaskName } from './env.ts';
import { argmax, Policy, policyConfigFromJson, type DemoModelConfig, type PolicyConfig } from './policy.ts';
import { deriveSeed } from './rng.ts';

/** Episodes per task in the standard arena. */
export const ARENA_EPISODES = 200;
/** Seed of the standard arena's episodes (independent of the training seed's streams). */
export const ARENA_SEED = 0x5eed_a2e4;

export interface DemoTensor {
  name: string;
  dtype: Dtype;
  shape: number[];
  bytes: Uint8Array;
}

export interface ArenaOptions {
  /** Episodes per task (default ARENA_EPISODES). */
  episodes?: number;
  /** Seed of the episode layouts (default ARENA_SEED). */
  seed?: number;
  /** Tasks to score (default: every task the model's config names). */
  tasks?: readonly TaskName[];
}

export interface TaskScore {
  name: TaskName;
  /** Mean episode score in [0, 1]. */
  score: number;
  episodes: number;
}

export interface ArenaResult {
  tasks: TaskScore[];
  /** Mean of the task scores. */
  mean: number;
}

/** Decodes checkpoint tensors (BF16, F16 or F32) to f32 arrays by name. */
export function loadDemoWeights(tensors: readonly DemoTensor[]): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const t of tensors) {
    const count = numel(t.shape);
    if (out.has(t.name)) throw new Error(`loadDemoWeights: tensor ${t.name} appears twice`);
    const width = t.dtype === 'F32' ? 4 : t.dtype === 'BF16' || t.dtype === 'F16' ? 2 : 0;
    if (width === 0)
      throw new Error(`loadDemoWeights: ${t.name} is ${t.dtype}; only BF16, F16 and F32 are read`);
    if (t.bytes.byteLength !== count * width)
      throw new Error(
        `loadDemoWeights: ${t.name} has ${t.bytes.byteLength} bytes, shape needs ${count * width}`,
      );
    const view = new DataView(t.bytes.buffer, t.bytes.byteOffset, t.bytes.byteLength);
    const data = new Float32Array(count);
    if (t.dtype === 'F32') for (let i = 0; i < count; i++) data[i] = view.getFloat32(i * 4, true);
    else if (t.dtype === 'BF16')
      for (let i = 0; i < count; i++) data[i] = bf16ToF32(view.getUint16(i * 2, true));
    else for (let i = 0; i < count; i++) data[i] = f16ToF32(view.getUint16(i * 2, true));
    out.set(t.name, data);
  }
  return out;
}

/** The tensors of a whole .safetensors file held in memory, validated by the project's reader. */
export function readDemoSafetensors(bytes: Uint8Array, file = 'model.safetensors'): DemoTensor[] {
  const header = parseSafetensorsHeader(file, bytes.byteLength, bytes);
  return header.tensors.map((t) => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    bytes: bytes.subarray(header.dataStart + t.begin, header.dataStart + t.end),
  }));
}

/** Every tensor of an opened model (any source: files, Blobs, memory), read whole: demo models are small. */
export async function modelDemoTensors(model: Model): Promise<DemoTensor[]> {
  const tensors: DemoTensor[] = [];
  for (const t of model.tensors.values())
    tensors.push({
      name: t.name,
      dtype: t.dtype,
      shape: t.shape,
      bytes: await model.source(t.file).read(t.offset, t.end - t.begin),
    });
  return tensors;
}

/** The layout seed of episode `index` of `task` in an arena seeded with `seed`. */
export function arenaEpisodeSeed(seed: number, task: TaskName, index: number): number {
  return deriveSeed(seed, TASKS.indexOf(task), index);
}

/** The task id each arena task has in this model (its row of `task_embed.weight`). */
function resolveTasks(config: PolicyConfig, wanted: readonly TaskName[] | undefined): [TaskName, number][] {
  const known = config.tasks.filter(isTaskName);
  const names = wanted ?? known;
  return names.map((name) => {
    const id = config.tasks.indexOf(name);
    if (id < 0)
      throw new Error(`evaluate: the model has no task "${name}" (it has ${config.tasks.join(', ')})`);
    return [name, id];
  });
}

function asPolicyConfig(config: PolicyConfig | DemoModelConfig): PolicyConfig {
  return 'model_type' in config ? policyConfigFromJson(config) : config;
}

function asParams(
  weights: ReadonlyMap<string, Float32Array> | readonly DemoTensor[],
): ReadonlyMap<string, Float32Array> {
  return weights instanceof Map ? weights : loadDemoWeights(weights as readonly DemoTensor[]);
}

/** Plays one greedy episode; returns its score and the agent's cells, start included. */
export function playEpisode(
  policy: Policy,
  task: TaskName,
  taskIdInModel: number,
  seed: number,
): { score: number; path: number[] } {
  const episode = createEpisode(task, seed);
  const path = [episode.agent];
  while (!episode.done) {
    step(episode, argmax(policy.forward(observe(episode), taskIdInModel).logits));
    path.push(episode.agent);
  }
  return { score: episode.score, path };
}

/** Scores a model on each task: the mean greedy-episode score over the arena's fixed episodes. */
export function evaluate(
  weights: ReadonlyMap<string, Float32Array> | readonly DemoTensor[],
  config: PolicyConfig | DemoModelConfig,
  opts: ArenaOptions = {},
): ArenaResult {
  const policyConfig = asPolicyConfig(config);
  const policy = new Policy(policyConfig, asParams(weights));
  const episodes = opts.episodes ?? ARENA_EPISODES;
  const seed = opts.seed ?? ARENA_SEED;
  if (!Number.isInteger(episodes) || episodes <= 0)
    throw new RangeError(`evaluate: bad episode count ${episodes}`);
  const tasks = resolveTasks(policyConfig, opts.tasks).map(([name, id]) => {
    let total = 0;
    for (let i = 0; i < episodes; i++)
      total += playEpisode(policy, name, id, arenaEpisodeSeed(seed, name, i)).score;
    return { name, score: total / episodes, episodes };
  });
  const mean = tasks.reduce((sum, t) => sum + t.score, 0) / tasks.length;
  return { tasks, mean };
}

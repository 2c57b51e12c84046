// The demo policy: a small ReLU MLP (observation → hidden layers → action logits, plus a task
// embedding added to the first hidden layer), its named checkpoint tensors, and its config.json.
// Forward and backward passes are plain JS in f64 over f32 parameters; no platform APIs.

import { bf16ToF32, f32ToBf16, type Dtype } from '../format/dtype.ts';
import { numel } from '../format/safetensors.ts';
import { at, atF32, atF64, must } from '../io/checked.ts';
import { Rng } from './rng.ts';

export const MODEL_TYPE = 'merge-studio-gridworld-mlp';
export const ARCHITECTURE = 'GridworldMlpPolicy';

export interface PolicyConfig {
  obsSize: number;
  hiddenSizes: readonly number[];
  numActions: number;
  /** Task names, in task-id order (rows of `task_embed.weight`). */
  tasks: readonly string[];
}

/** config.json of a demo model, in the Hugging Face style. */
export interface DemoModelConfig {
  model_type: typeof MODEL_TYPE;
  architectures: [typeof ARCHITECTURE];
  obs_size: number;
  hidden_sizes: number[];
  num_actions: number;
  activation: 'relu';
  tasks: string[];
  torch_dtype: 'bfloat16';
  /** Environment facts a reader needs to run the policy (see src/demo/env.ts). */
  grid_size: number;
  max_steps: number;
  observation: string;
  actions: string[];
  /** What this checkpoint is: the base or the agent fine-tuned on one task. */
  role: 'base' | 'agent';
  task?: string;
}

export interface TensorSpec {
  name: string;
  shape: number[];
}

/** The checkpoint's tensors, in file-independent order: embedding, hidden layers, head. */
export function tensorSpecs(config: PolicyConfig): TensorSpec[] {
  const specs: TensorSpec[] = [
    { name: 'task_embed.weight', shape: [config.tasks.length, at(config.hiddenSizes, 0, 'hiddenSizes')] },
  ];
  let inputs = config.obsSize;
  config.hiddenSizes.forEach((size, i) => {
    specs.push({ name: `layers.${i}.weight`, shape: [size, inputs] });
    specs.push({ name: `layers.${i}.bias`, shape: [size] });
    inputs = size;
  });
  specs.push({ name: 'head.weight', shape: [config.numActions, inputs] });
  specs.push({ name: 'head.bias', shape: [config.numActions] });
  return specs;
}

export function parameterCount(config: PolicyConfig): number {
  return tensorSpecs(config).reduce((total, spec) => total + numel(spec.shape), 0);
}

/**
 * Fresh parameters, as PyTorch draws them by default: nn.Linear weights and biases uniform in
 * ±1/√fan_in, nn.Embedding rows N(0, 1) (here Irwin–Hall: 12 uniforms − 6, pure arithmetic).
 * The unit-scale embedding switches part of the first layer off per task, as in real networks.
 */
export function initParams(config: PolicyConfig, seed: number, embedScale = 1): Map<string, Float32Array> {
  const rng = new Rng(seed);
  const params = new Map<string, Float32Array>();
  for (const spec of tensorSpecs(config)) {
    const data = new Float32Array(numel(spec.shape));
    if (spec.name === 'task_embed.weight') {
      for (let i = 0; i < data.length; i++) {
        let sum = -6;
        for (let k = 0; k < 12; k++) sum += rng.float();
        data[i] = sum * embedScale;
      }
    } else {
      const bound = 1 / Math.sqrt(fanInOf(config, spec.name));
      for (let i = 0; i < data.length; i++) data[i] = (rng.float() * 2 - 1) * bound;
    }
    params.set(spec.name, data);
  }
  return params;
}

function fanInOf(config: PolicyConfig, name: string): number {
  const sizes = config.hiddenSizes;
  if (name.startsWith('head.')) return at(sizes, sizes.length - 1, 'hiddenSizes');
  const layer = Number(name.split('.')[1]);
  return layer === 0 ? config.obsSize : at(sizes, layer - 1, 'hiddenSizes');
}

export function cloneParams(params: ReadonlyMap<string, Float32Array>): Map<string, Float32Array> {
  return new Map([...params].map(([name, data]) => [name, data.slice()]));
}

/** Every value rounded to bf16 and widened back: what a bf16 checkpoint of these parameters holds. */
export function roundParamsToBf16(params: ReadonlyMap<string, Float32Array>): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const [name, data] of params)
    out.set(
      name,
      data.map((v) => bf16ToF32(f32ToBf16(v))),
    );
  return out;
}

/** The parameters as BF16 checkpoint tensors (little-endian bytes), in `tensorSpecs` order. */
export function toBf16Tensors(
  config: PolicyConfig,
  params: ReadonlyMap<string, Float32Array>,
): { name: string; dtype: Dtype; shape: number[]; data: Uint8Array }[] {
  return tensorSpecs(config).map((spec) => {
    const values = params.get(spec.name);
    if (!values) throw new Error(`toBf16Tensors: missing tensor ${spec.name}`);
    const data = new Uint8Array(values.length * 2);
    const view = new DataView(data.buffer);
    values.forEach((v, i) => view.setUint16(i * 2, f32ToBf16(v), true));
    return { name: spec.name, dtype: 'BF16', shape: spec.shape, data };
  });
}

export function toConfigJson(
  config: PolicyConfig,
  env: { gridSize: number; maxSteps: number; observation: string; actions: readonly string[] },
  role: { role: 'base' } | { role: 'agent'; task: string },
): DemoModelConfig {
  return {
    model_type: MODEL_TYPE,
    architectures: [ARCHITECTURE],
    obs_size: config.obsSize,
    hidden_sizes: [...config.hiddenSizes],
    num_actions: config.numActions,
    activation: 'relu',
    tasks: [...config.tasks],
    torch_dtype: 'bfloat16',
    grid_size: env.gridSize,
    max_steps: env.maxSteps,
    observation: env.observation,
    actions: [...env.actions],
    ...role,
  };
}

/** Reads the network shape out of a config.json (a demo one, or a merge's copy of it). */
export function policyConfigFromJson(json: unknown): PolicyConfig {
  if (typeof json !== 'object' || json === null) throw new Error('config.json: not an object');
  const c = json as Record<string, unknown>;
  if (c.model_type !== MODEL_TYPE) throw new Error(`config.json: model_type is not "${MODEL_TYPE}"`);
  const positive = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;
  const hidden = c.hidden_sizes;
  const tasks = c.tasks;
  if (!positive(c.obs_size) || !positive(c.num_actions))
    throw new Error('config.json: bad obs_size/num_actions');
  if (!Array.isArray(hidden) || hidden.length === 0 || !hidden.every(positive))
    throw new Error('config.json: bad hidden_sizes');
  if (!Array.isArray(tasks) || tasks.length === 0 || !tasks.every((t) => typeof t === 'string'))
    throw new Error('config.json: bad tasks');
  return { obsSize: c.obs_size, hiddenSizes: hidden, numActions: c.num_actions, tasks: tasks as string[] };
}

/** What one forward pass leaves for the backward pass. */
export interface Activations {
  active: readonly number[];
  taskId: number;
  /** Post-ReLU values of each hidden layer. */
  hidden: Float64Array[];
  logits: Float64Array;
}

/** Gradient accumulators, one f64 array per tensor. */
export type Gradients = Map<string, Float64Array>;

/**
 * A policy bound to one set of parameter arrays (shared, not copied: an optimiser that updates the
 * arrays in place updates the policy). Inputs are binary, so the first layer sums weight columns.
 */
export class Policy {
  readonly config: PolicyConfig;
  private readonly embed: Float32Array;
  private readonly weights: Float32Array[] = [];
  private readonly biases: Float32Array[] = [];
  private readonly names: string[];

  constructor(config: PolicyConfig, params: ReadonlyMap<string, Float32Array>) {
    this.config = config;
    const get = (spec: TensorSpec): Float32Array => {
      const data = params.get(spec.name);
      if (!data) throw new Error(`Policy: missing tensor ${spec.name}`);
      if (data.length !== numel(spec.shape))
        throw new Error(
          `Policy: ${spec.name} has ${data.length} values, expected [${spec.shape.join(', ')}]`,
        );
      return data;
    };
    const specs = tensorSpecs(config);
    this.names = specs.map((spec) => spec.name);
    this.embed = get(at(specs, 0, 'Policy tensor specs'));
    for (let i = 1; i < specs.length; i += 2) {
      this.weights.push(get(at(specs, i, 'Policy tensor specs')));
      this.biases.push(get(at(specs, i + 1, 'Policy tensor specs')));
    }
  }

  /** Logits for an observation given as its active features (ascending) and a task id. */
  forward(active: readonly number[], taskId: number): Activations {
    if (!Number.isInteger(taskId) || taskId < 0 || taskId >= this.config.tasks.length)
      throw new RangeError(`Policy.forward: bad task id ${taskId}`);
    const hidden: Float64Array[] = [];
    const inputs = this.config.obsSize;
    // Each layer's width is its bias length (the constructor checked every shape).
    const w0 = at(this.weights, 0, 'Policy weights');
    const b0 = at(this.biases, 0, 'Policy biases');
    const h0 = new Float64Array(b0.length);
    for (let j = 0; j < b0.length; j++) {
      let acc = atF32(b0, j) + atF32(this.embed, taskId * h0.length + j);
      for (const i of active) acc += atF32(w0, j * inputs + i);
      h0[j] = acc > 0 ? acc : 0;
    }
    hidden.push(h0);
    let previous = h0;
    const layers = this.weights.length;
    let logits = h0;
    for (let l = 1; l < layers; l++) {
      const w = at(this.weights, l, 'Policy weights');
      const b = at(this.biases, l, 'Policy biases');
      const out = new Float64Array(b.length);
      const n = previous.length;
      for (let j = 0; j < b.length; j++) {
        let acc = atF32(b, j);
        for (let k = 0; k < n; k++) acc += atF32(w, j * n + k) * atF64(previous, k);
        out[j] = l === layers - 1 || acc > 0 ? acc : 0;
      }
      if (l < layers - 1) hidden.push(out);
      previous = out;
      logits = out;
    }
    return { active, taskId, hidden, logits };
  }

  /** Adds ∂loss/∂θ to `grads`, given ∂loss/∂logits for one forward pass. */
  backward(act: Activations, dLogits: ArrayLike<number>, grads: Gradients): void {
    // The gradient accumulator of the tensor at `index` in tensorSpecs order.
    const gradient = (index: number): Float64Array => {
      const name = at(this.names, index, 'Policy tensor names');
      return must(grads.get(name), `gradient of ${name}`);
    };
    let delta = Float64Array.from(dLogits);
    for (let l = this.weights.length - 1; l >= 1; l--) {
      const input = at(act.hidden, l - 1, 'hidden activations');
      const n = input.length;
      const gw = gradient(1 + 2 * l);
      const gb = gradient(2 + 2 * l);
      const w = at(this.weights, l, 'Policy weights');
      const back = new Float64Array(n);
      for (let j = 0; j < delta.length; j++) {
        const d = atF64(delta, j);
        if (d === 0) continue;
        gb[j] = atF64(gb, j) + d;
        const row = j * n;
        for (let k = 0; k < n; k++) {
          const x = atF64(input, k);
          gw[row + k] = atF64(gw, row + k) + d * x;
          back[k] = atF64(back, k) + d * atF32(w, row + k);
        }
      }
      // ReLU: no gradient through units that were off.
      for (let k = 0; k < n; k++) if (atF64(input, k) <= 0) back[k] = 0;
      delta = back;
    }
    const inputs = this.config.obsSize;
    const gw0 = gradient(1);
    const gb0 = gradient(2);
    const ge = gradient(0);
    const width = delta.length;
    for (let j = 0; j < width; j++) {
      const d = atF64(delta, j);
      if (d === 0) continue;
      gb0[j] = atF64(gb0, j) + d;
      const e = act.taskId * width + j;
      ge[e] = atF64(ge, e) + d;
      for (const i of act.active) {
        const x = j * inputs + i;
        gw0[x] = atF64(gw0, x) + d;
      }
    }
  }

  /** Zeroed gradient accumulators for this policy's tensors. */
  zeroGradients(): Gradients {
    return new Map(tensorSpecs(this.config).map((spec) => [spec.name, new Float64Array(numel(spec.shape))]));
  }
}

/** The greedy action: the first index of the largest logit (NaN logits never win). */
export function argmax(logits: ArrayLike<number>): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    const value = at(logits, i, 'logits');
    if (value > bestValue) {
      best = i;
      bestValue = value;
    }
  }
  return best;
}

/** Softmax probabilities, max-subtracted for stability. */
export function softmax(logits: ArrayLike<number>): Float64Array {
  const values = Float64Array.from(logits);
  let max = -Infinity;
  for (const v of values) if (v > max) max = v;
  const exps = values.map((v) => Math.exp(v - max));
  let sum = 0;
  for (const e of exps) sum += e;
  return exps.map((e) => e / sum);
}

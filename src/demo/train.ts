// Trains the demo set: a base that imitates a scripted, task-blind "walk to the nearest object"
// behaviour on a mix of the tasks, then one agent per task fine-tuned FROM THE STORED (bf16) BASE by
// REINFORCE on that task alone. Master weights and optimiser state are f32, as in real RL
// fine-tuning; every checkpoint is rounded to bf16, so updates under half a bf16 step vanish.
// Pure and deterministic: the same config gives the same bits on any JS engine.

import { serializeSafetensors } from '../format/write.ts';
import { at, atF32, atF64, must } from '../io/checked.ts';
import {
  ACTIONS,
  createEpisode,
  generalAction,
  GRID,
  MAX_STEPS,
  NUM_ACTIONS,
  observe,
  OBS_SIZE,
  OBSERVATION_LAYOUT,
  step,
  taskId,
  TASKS,
} from './env.ts';
import type { TaskName } from './env.ts';
import {
  cloneParams,
  toBf16Tensors,
  toConfigJson,
  initParams,
  Policy,
  roundParamsToBf16,
  softmax,
  type Activations,
  type Gradients,
  type PolicyConfig,
} from './policy.ts';
import { deriveSeed, Rng } from './rng.ts';

export interface BaseTrainConfig {
  /** Optimiser steps; each one averages the imitation gradient over `batchEpisodes` episodes. */
  updates: number;
  batchEpisodes: number;
  lr: number;
  /** Probability that the behaviour policy follows the teacher rather than sampling the learner. */
  teacherShare: number;
  /** Standard deviation of the task embedding at initialisation (PyTorch's nn.Embedding: 1). */
  embedScale: number;
}

export interface AgentTrainConfig {
  updates: number;
  batchEpisodes: number;
  lr: number;
  /** Discount of the reward-to-go. */
  gamma: number;
  /** Running baseline b_t ← decay·b_t + (1 − decay)·mean return at step t. */
  baselineDecay: number;
  optimizer: 'adam' | 'sgd';
  /** SGD momentum (heavy ball); ignored by Adam. */
  momentum: number;
}

export interface TrainConfig {
  seed: number;
  hiddenSizes: number[];
  tasks: readonly TaskName[];
  base: BaseTrainConfig;
  agent: AgentTrainConfig;
}

/** The configuration that produced the committed set in public/demo/. */
export const DEMO_TRAIN_CONFIG: TrainConfig = {
  seed: 2601,
  hiddenSizes: [64, 64],
  tasks: TASKS,
  base: { updates: 1500, batchEpisodes: 16, lr: 1e-3, teacherShare: 0.5, embedScale: 1 },
  agent: {
    updates: 1500,
    batchEpisodes: 32,
    lr: 0.02,
    gamma: 0.97,
    baselineDecay: 0.9,
    optimizer: 'sgd',
    momentum: 0.9,
  },
};

export function policyConfigFor(config: TrainConfig): PolicyConfig {
  return {
    obsSize: OBS_SIZE,
    hiddenSizes: config.hiddenSizes,
    numActions: NUM_ACTIONS,
    tasks: [...config.tasks],
  };
}

/** Adam with f32 state, bias-corrected, no weight decay (decay would move every weight). */
class Adam {
  private readonly m = new Map<string, Float32Array>();
  private readonly v = new Map<string, Float32Array>();
  private t = 0;
  private readonly beta1 = 0.9;
  private readonly beta2 = 0.999;
  private readonly eps = 1e-8;

  constructor(private readonly params: Map<string, Float32Array>) {
    for (const [name, data] of params) {
      this.m.set(name, new Float32Array(data.length));
      this.v.set(name, new Float32Array(data.length));
    }
  }

  /** One step against `grads` scaled by `scale` (the batch mean). */
  step(grads: Gradients, scale: number, lr: number): void {
    this.t += 1;
    const c1 = 1 - this.beta1 ** this.t;
    const c2 = 1 - this.beta2 ** this.t;
    for (const [name, p] of this.params) {
      const g = must(grads.get(name), `Adam: gradient of ${name}`);
      const m = must(this.m.get(name), `Adam: first moment of ${name}`);
      const v = must(this.v.get(name), `Adam: second moment of ${name}`);
      for (let i = 0; i < p.length; i++) {
        const gi = atF64(g, i, name) * scale;
        m[i] = this.beta1 * atF32(m, i, name) + (1 - this.beta1) * gi;
        v[i] = this.beta2 * atF32(v, i, name) + (1 - this.beta2) * gi * gi;
        // Read back the stored f32 moments, so the step uses what an f32 optimiser holds.
        const mi = atF32(m, i, name);
        const vi = atF32(v, i, name);
        if (mi === 0) continue;
        p[i] = atF32(p, i, name) - (lr * (mi / c1)) / (Math.sqrt(vi / c2) + this.eps);
      }
    }
  }
}

/** SGD with heavy-ball momentum and an f32 velocity: the step is proportional to the gradient. */
class Sgd {
  private readonly velocity = new Map<string, Float32Array>();

  constructor(
    private readonly params: Map<string, Float32Array>,
    private readonly momentum: number,
  ) {
    for (const [name, data] of params) this.velocity.set(name, new Float32Array(data.length));
  }

  step(grads: Gradients, scale: number, lr: number): void {
    for (const [name, p] of this.params) {
      const g = must(grads.get(name), `Sgd: gradient of ${name}`);
      const u = must(this.velocity.get(name), `Sgd: velocity of ${name}`);
      for (let i = 0; i < p.length; i++) {
        u[i] = this.momentum * atF32(u, i, name) + atF64(g, i, name) * scale;
        // Read back the stored f32 velocity, as an f32 optimiser would.
        const ui = atF32(u, i, name);
        if (ui !== 0) p[i] = atF32(p, i, name) - lr * ui;
      }
    }
  }
}

export interface TrainLogEntry {
  update: number;
  /** Mean episode score of the batch (behaviour policy). */
  score: number;
}

export interface BaseResult {
  /** bf16-rounded values: exactly what base/model.safetensors stores. */
  params: Map<string, Float32Array>;
  log: TrainLogEntry[];
}

export interface AgentResult {
  task: TaskName;
  /** bf16-rounded values: exactly what <task>/model.safetensors stores. */
  params: Map<string, Float32Array>;
  /** The f32 master weights at the end of training, before rounding. */
  master: Map<string, Float32Array>;
  log: TrainLogEntry[];
  /** Elements whose f32 master value differs from the base after training. */
  masterChanged: number;
  /** Of those, elements whose bf16 value differs from the base (the rest were sub-ulp and vanished). */
  storedChanged: number;
}

type Progress = (phase: string, update: number, updates: number, score: number) => void;

/** Behaviour cloning of `generalAction` on episodes of every task, with DAgger-style mixed rollouts. */
export function trainBase(config: TrainConfig, onProgress?: Progress): BaseResult {
  const policyConfig = policyConfigFor(config);
  const params = initParams(policyConfig, deriveSeed(config.seed, 1), config.base.embedScale);
  const policy = new Policy(policyConfig, params);
  const adam = new Adam(params);
  const rng = new Rng(deriveSeed(config.seed, 2));
  const log: TrainLogEntry[] = [];
  const { updates, batchEpisodes, lr, teacherShare } = config.base;
  const target = new Float64Array(NUM_ACTIONS);
  for (let u = 0; u < updates; u++) {
    const grads = policy.zeroGradients();
    let samples = 0;
    let score = 0;
    for (let e = 0; e < batchEpisodes; e++) {
      const task = at(config.tasks, rng.int(config.tasks.length), 'tasks');
      const episode = createEpisode(task, rng.nextU32());
      const id = config.tasks.indexOf(task);
      while (!episode.done) {
        const act = policy.forward(observe(episode), id);
        const probs = softmax(act.logits);
        const teacher = generalAction(episode);
        target.fill(0);
        target[teacher] = 1;
        // Cross-entropy gradient with respect to the logits: p − onehot(teacher).
        policy.backward(
          act,
          probs.map((p, a) => p - atF64(target, a, 'target')),
          grads,
        );
        samples += 1;
        step(episode, rng.float() < teacherShare ? teacher : sample(probs, rng));
      }
      score += episode.score;
    }
    adam.step(grads, 1 / samples, lr);
    log.push({ update: u, score: score / batchEpisodes });
    onProgress?.('base', u, updates, score / batchEpisodes);
  }
  return { params: roundParamsToBf16(params), log };
}

interface Transition {
  act: Activations;
  probs: Float64Array;
  action: number;
  reward: number;
}

/**
 * REINFORCE on one task from the bf16 base: loss −Σ_t (G_t − b_t) log π(a_t | s_t), with G_t the
 * discounted reward-to-go and b_t a running mean of G at step t.
 */
export function trainAgent(
  config: TrainConfig,
  base: ReadonlyMap<string, Float32Array>,
  task: TaskName,
  onProgress?: Progress,
): AgentResult {
  const policyConfig = policyConfigFor(config);
  const params = cloneParams(base);
  const policy = new Policy(policyConfig, params);
  const optimizer =
    config.agent.optimizer === 'adam' ? new Adam(params) : new Sgd(params, config.agent.momentum);
  const rng = new Rng(deriveSeed(config.seed, 3, taskId(task)));
  const id = config.tasks.indexOf(task);
  if (id < 0) throw new Error(`trainAgent: task ${task} is not in the config`);
  const { updates, batchEpisodes, lr, gamma, baselineDecay } = config.agent;
  const baseline: number[] = [];
  const log: TrainLogEntry[] = [];
  for (let u = 0; u < updates; u++) {
    const episodes: Transition[][] = [];
    let score = 0;
    for (let e = 0; e < batchEpisodes; e++) {
      const episode = createEpisode(task, rng.nextU32());
      const trajectory: Transition[] = [];
      while (!episode.done) {
        const act = policy.forward(observe(episode), id);
        const probs = softmax(act.logits);
        const action = sample(probs, rng);
        trajectory.push({ act, probs, action, reward: step(episode, action) });
      }
      episodes.push(trajectory);
      score += episode.score;
    }
    const returns = episodes.map((trajectory) => {
      const g = new Float64Array(trajectory.length);
      let acc = 0;
      for (let t = trajectory.length - 1; t >= 0; t--)
        g[t] = acc = at(trajectory, t, 'trajectory').reward + gamma * acc;
      return g;
    });
    const grads = policy.zeroGradients();
    episodes.forEach((trajectory, e) => {
      const g = at(returns, e, 'returns');
      trajectory.forEach((tr, t) => {
        const advantage = atF64(g, t, 'returns') - (baseline[t] ?? 0);
        if (advantage === 0) return;
        // ∂(−A log π(a))/∂logits = A · (π − onehot(a)).
        const d = tr.probs.map((p, a) => advantage * (p - (a === tr.action ? 1 : 0)));
        policy.backward(tr.act, d, grads);
      });
    });
    optimizer.step(grads, 1 / batchEpisodes, lr);
    updateBaseline(baseline, returns, baselineDecay, u === 0);
    log.push({ update: u, score: score / batchEpisodes });
    onProgress?.(task, u, updates, score / batchEpisodes);
  }
  const stored = roundParamsToBf16(params);
  let masterChanged = 0;
  let storedChanged = 0;
  for (const [name, values] of params) {
    const b = must(base.get(name), `trainAgent: base tensor ${name}`);
    const s = must(stored.get(name), `trainAgent: stored tensor ${name}`);
    for (const [i, value] of values.entries()) {
      if (value !== b[i]) masterChanged += 1;
      if (s[i] !== b[i]) storedChanged += 1;
    }
  }
  return { task, params: stored, master: params, log, masterChanged, storedChanged };
}

function updateBaseline(baseline: number[], returns: Float64Array[], decay: number, first: boolean): void {
  const longest = Math.max(...returns.map((g) => g.length));
  for (let t = 0; t < longest; t++) {
    let sum = 0;
    let count = 0;
    for (const g of returns) {
      const value = g[t];
      if (value !== undefined) {
        sum += value;
        count += 1;
      }
    }
    const mean = sum / count;
    const previous = baseline[t];
    baseline[t] = first || previous === undefined ? mean : decay * previous + (1 - decay) * mean;
  }
}

function sample(probs: Float64Array, rng: Rng): number {
  const u = rng.float();
  let acc = 0;
  for (const [a, p] of probs.subarray(0, -1).entries()) {
    acc += p;
    if (u < acc) return a;
  }
  return probs.length - 1;
}

export interface DemoSet {
  config: TrainConfig;
  policyConfig: PolicyConfig;
  base: BaseResult;
  agents: AgentResult[];
}

/** The whole set: the base, then one agent per task, each from the same stored base. */
export function trainDemoSet(config: TrainConfig, onProgress?: Progress): DemoSet {
  const base = trainBase(config, onProgress);
  const agents = config.tasks.map((task) => trainAgent(config, base.params, task, onProgress));
  return { config, policyConfig: policyConfigFor(config), base, agents };
}

/** The files of one model folder: BF16 model.safetensors and its config.json (UTF-8, LF-terminated). */
export function serializeModel(
  policyConfig: PolicyConfig,
  params: ReadonlyMap<string, Float32Array>,
  role: { role: 'base' } | { role: 'agent'; task: string },
  seed: number,
): { safetensors: Uint8Array; configJson: string } {
  const metadata: Record<string, string> = {
    format: 'pt',
    merge_studio_demo: role.role === 'base' ? 'base' : `agent:${role.task}`,
    seed: String(seed),
  };
  const safetensors = serializeSafetensors(toBf16Tensors(policyConfig, params), metadata);
  const config = toConfigJson(
    policyConfig,
    { gridSize: GRID, maxSteps: MAX_STEPS, observation: OBSERVATION_LAYOUT, actions: ACTIONS },
    role,
  );
  return { safetensors, configJson: `${JSON.stringify(config, null, 2)}\n` };
}

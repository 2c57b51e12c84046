// The GPU MergeEngine: the calls of the MergeEngine contract, one after another on one queue. How a
// tensor's windows reach the GPU and come back is the pass runner's (pass-runner.ts); which passes a
// method runs before its merge kernel, and which kernel that is, method-passes.ts's and
// merge-pass.ts's; the statistics are a reduce pass (reduce-passes.ts).

import { dtypeBits } from '../../format/dtype.ts';
import { deriveTensorStats } from '../../methods/stats.ts';
import { methodOf } from '../../methods/registry/index.ts';
import { checkMergeOptions, forTensor } from '../contract.ts';
import type { MergeEngine, MergeOptions, StageTimings, WindowCacheReport } from '../contract.ts';
import type { TensorInput, TensorStats } from '../../methods/tensors.ts';
import { engineBuffer } from './buffer-sets.ts';
import { divisionIsExact } from './division.ts';
import { KernelCache } from './kernel-cache.ts';
import type { MergeVariant } from './kernels/merge-bindings.ts';
import { TIE_CARRY_WORDS } from './kernels/topk_scan.ts';
import { AGENT_BYTES, type AgentParams } from './layout.ts';
import { runMerge } from './merge-pass.ts';
import { preparePasses, runPassesBeforeMerge, type MergeSetup, type MethodContext } from './method-passes.ts';
import { PassRunner, type Job, type WholeSlabs } from './pass-runner.ts';
import {
  driverMemory,
  tieRowsPerAgent,
  DEFAULT_MEMORY_BUDGET,
  DEFAULT_WINDOW_ELEMENTS,
  type DriverMemory,
} from './plumbing.ts';
import { runReduce, statsPass } from './reduce-passes.ts';
import { Scheduler } from './scheduler.ts';
import { LowRankRunner } from './low-rank.ts';
import type { LowRankProduct } from '../../methods/lora.ts';
import { ScratchBuffers } from './scratch.ts';
import { TopKSelect, type SelectRoute, type TieSpan } from './topk-select.ts';

export interface GpuEngineOptions {
  agents: number;
  adapterDescription: string;
  /** Cap on elements per window (default 2^23); tests set it tiny to force many windows. */
  maxWindowElements?: number;
  /** Bytes all window buffers of both sets may take together (default DEFAULT_MEMORY_BUDGET). */
  memoryBudget?: number;
  /** Test aid: fill the output buffer with 0xFF bytes before every merge window, so unwritten words show. */
  poisonOutput?: boolean;
  /** Benchmark aid: 'radix' skips the sampled select (topk-select.ts), to time the two in one run. */
  topKSelect?: 'sampled' | 'radix';
  /**
   * How window reads reach the GPU (default 'mapped'): into a mapped MAP_WRITE staging buffer copied on
   * the GPU (dawn.node maps it in this process: the reads are the only copy on the calling thread), or
   * 'copied' into host memory that writeBuffer copies. The studio's worker copies: in Chromium a
   * mapping is shared memory that the GPU process copies out of again, and File bytes through it cost
   * 3.5 CPU-seconds more there per 1.33 GiB (src/bench/studio.ts, 2026-12-06, with arrayBuffer()
   * reads; not measured again since File reads fill the caller's memory). A copied upload is written
   * once the queue is idle (upload()).
   */
  uploads?: 'mapped' | 'copied';
  /**
   * Test aid: correct every f32 quotient of the merge kernels (true) or none (false), where the
   * default asks divisionIsExact (division.ts) whether this device needs it.
   */
  correctDivision?: boolean;
  /** Test aid: keys the sampled select may collect between its brackets' ends (default MAX_COLLECTED). */
  maxCollected?: number;
  /** Test and benchmark aid: how each top-k of a tensor's TIES-family select was settled. */
  onSelectRoutes?: (
    tensor: string,
    routes: readonly SelectRoute[],
    spans: readonly (TieSpan | undefined)[],
  ) => void;
}

/** The statistics kernel keeps per-element agent sets in one u32 bitmask. */
export const MAX_GPU_AGENTS = 32;

const noop = (): void => undefined;

export function createGpuEngine(device: GPUDevice, options: GpuEngineOptions): MergeEngine {
  return new GpuEngine(device, options);
}

class GpuEngine implements MergeEngine {
  readonly kind = 'gpu';
  readonly description: string;
  readonly agents: number;
  readonly driverMemory: DriverMemory;
  private readonly scheduler: Scheduler;
  private readonly kernels: KernelCache;
  private readonly agentBuffer: GPUBuffer;
  private readonly carry: GPUBuffer;
  private readonly runner: PassRunner;
  private readonly topK: TopKSelect<Job>;
  private readonly scratch: ScratchBuffers;
  /** What the passes of every call share: the device, the queue, the kernels and the window walk. */
  private readonly ctx: MethodContext;
  private readonly lowRank: LowRankRunner;
  private destroyed = false;
  /**
   * Calls share the buffer sets and the queue, so they start one after another in call order: a merge
   * once the one before has submitted its last window (its read-back and emits go on meanwhile),
   * anything else once the call before has settled. Never rejects.
   */
  private tail: Promise<void> = Promise.resolve();

  constructor(
    private readonly device: GPUDevice,
    private readonly options: GpuEngineOptions,
  ) {
    const n = options.agents;
    if (!Number.isInteger(n) || n < 1 || n > MAX_GPU_AGENTS) {
      throw new RangeError(`the GPU engine merges 1 to ${MAX_GPU_AGENTS} agents, not ${n}`);
    }
    this.agents = n;
    this.description = options.adapterDescription;
    const maxWindow = options.maxWindowElements ?? DEFAULT_WINDOW_ELEMENTS;
    const memoryBudget = options.memoryBudget ?? DEFAULT_MEMORY_BUDGET;
    // Windows are sized to the rest (windowElements).
    this.driverMemory = driverMemory(memoryBudget, n, maxWindow);
    this.scheduler = new Scheduler(device, 'MergeEngine');
    this.kernels = new KernelCache(device);
    this.scratch = new ScratchBuffers(device);
    const storage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    this.agentBuffer = engineBuffer(device, 'agents', n * AGENT_BYTES, storage);
    // Two tie rows per agent (Model Breadcrumbs cuts ties at two thresholds), each with a cutoff.
    this.carry = engineBuffer(device, 'carry', TIE_CARRY_WORDS * n * 4, storage);
    this.runner = new PassRunner({
      device,
      scheduler: this.scheduler,
      agents: n,
      agentBuffer: this.agentBuffer,
      carry: this.carry,
      maxWindow,
      memoryBudget,
      driverMemory: this.driverMemory,
      uploads: options.uploads ?? 'mapped',
      poisonOutput: options.poisonOutput ?? false,
    });
    const runner = this.runner;
    this.topK = new TopKSelect<Job>({
      device,
      scheduler: this.scheduler,
      agents: n,
      agentBuffer: this.agentBuffer,
      kernel: (request) => this.kernels.get(request),
      sampled: options.topKSelect !== 'radix',
      ...(options.maxCollected !== undefined ? { maxCollected: options.maxCollected } : {}),
      ...(options.onSelectRoutes ? { onRoutes: options.onSelectRoutes } : {}),
      countPass: (job, pass) =>
        runner.run(job, {
          label: pass.label,
          withBase: true,
          keep: true,
          order: pass.order,
          groups: (w) => pass.groups(w),
          params: (w, d) => pass.params(w, d),
          encode: (encoder, set, _w, d) => pass.encode(encoder, set.io, d),
        }),
    });
    this.lowRank = new LowRankRunner(device, this.scheduler, this.kernels);
    this.ctx = {
      device,
      scheduler: this.scheduler,
      agents: n,
      agentBuffer: this.agentBuffer,
      carry: this.carry,
      kernels: this.kernels,
      runner,
      topK: this.topK,
      scratch: this.scratch,
    };
  }

  get timings(): StageTimings {
    return this.scheduler.timings;
  }

  get windowCache(): WindowCacheReport {
    return this.runner.windowCache;
  }

  analyze(
    tensor: TensorInput,
    epsilon: number,
    signal?: AbortSignal,
    onSubmitted?: () => void,
  ): Promise<TensorStats> {
    return this.serialized(
      (submitted) =>
        forTensor(tensor.name, async () => {
          const job = await this.job(tensor, signal, 4, 0);
          const stats = await runReduce(this.ctx, job, statsPass(job, this.agents, epsilon), submitted);
          return deriveTensorStats(stats);
        }),
      onSubmitted,
    );
  }

  readonly product: LowRankProduct = (job) => {
    if (this.destroyed) return Promise.reject(new Error('this GPU engine has been destroyed'));
    return this.lowRank.run(job);
  };

  merge(tensor: TensorInput, options: MergeOptions): Promise<void> {
    return this.serialized(
      (submitted) => forTensor(tensor.name, () => this.mergeTensor(tensor, options, submitted)),
      options.onSubmitted,
    );
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.runner.destroy();
    for (const b of [this.agentBuffer, this.carry]) b.destroy();
    this.topK.destroy();
    this.scratch.destroy();
    this.kernels.destroy();
    this.scheduler.destroy();
  }

  /**
   * The passes the method's plan needs before its merge (method-passes.ts), then the merge
   * (merge-pass.ts). `submitted`: called once the merge pass has submitted its last window.
   */
  private async mergeTensor(
    tensor: TensorInput,
    options: MergeOptions,
    submitted: () => void,
  ): Promise<void> {
    const { params, outDtype } = options;
    const lambdas = checkMergeOptions(options, this.agents);
    const { plan } = methodOf(params.method);
    const slabs = preparePasses(this.ctx, plan, tensor, params);
    const outBytes = dtypeBits(outDtype) / 8;
    const job = await this.job(tensor, options.signal, outBytes, tieRowsPerAgent(plan), slabs);
    const variant: MergeVariant = {
      inDtype: tensor.dtype,
      outDtype,
      agents: this.agents,
      correctDivision: this.options.correctDivision ?? !(await divisionIsExact(this.device)),
    };
    const agents: AgentParams[] = params.weights.map((weight, t) => ({ weight, lambda: lambdas[t] }));
    const setup: MergeSetup = { job, plan, params, variant, agents, tieBreak: null, prelude: null };
    await runPassesBeforeMerge(this.ctx, setup);
    if (plan.lambdas === 'tensor') options.onTensorLambdas?.(agents.map((a) => a.lambda ?? 1));
    await runMerge(this.ctx, job, { ...setup, options, submitted });
  }

  /**
   * `tieRows`: tie-count rows per agent the job's merge ranks ties in (tieRowsPerAgent); `slabs`:
   * windows of whole slabs (preparePasses).
   */
  private async job(
    tensor: TensorInput,
    signal: AbortSignal | undefined,
    outBytes: number,
    tieRows: number,
    slabs?: WholeSlabs,
  ): Promise<Job> {
    if (this.destroyed) throw new Error('this GPU engine has been destroyed');
    this.scheduler.check();
    return this.runner.job(tensor, signal, outBytes, tieRows, slabs);
  }

  /**
   * Runs `run` after the calls before it have let go: when it calls `submitted` (which then tells
   * the caller's `onSubmitted` too), or when it settles, whichever comes first.
   */
  private serialized<T>(run: (submitted: () => void) => Promise<T>, onSubmitted?: () => void): Promise<T> {
    let release = noop;
    const released = new Promise<void>((resolve) => (release = resolve));
    const result = this.tail.then(() =>
      run(() => {
        release();
        onSubmitted?.();
      }),
    );
    result.then(release, release);
    this.tail = released;
    return result;
  }
}

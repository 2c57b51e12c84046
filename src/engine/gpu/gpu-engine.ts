// The GPU MergeEngine: each tensor flows in windows sized to the device's binding limits through two
// buffer sets (window i+1 is read while window i computes and reads back), with the extra passes a
// method needs (statistics before tensor-local RAM+, radix-select passes before TIES).

import { dtypeBits, type FloatDtype } from '../../format/dtype.ts';
import { at } from '../../io/checked.ts';
import { dareKeepBelow, dareScale, fnv1a32 } from '../../methods/rng.ts';
import { topKCount } from '../../methods/select.ts';
import { deriveTensorStats, emptyTensorStats, localLambdas } from '../../methods/stats.ts';
import { dareScalePlan, emptyDareNorms, l1Scales } from '../../methods/dare-norms.ts';
import { addDareNorms, dareNormsBytes, dareNormsRequest, NORM_GROUPS } from './kernels/dare_norms.ts';
import { checkMergeOptions, forTensor } from '../contract.ts';
import { NonFiniteTally } from '../../methods/errors.ts';
import { throwIfAborted } from '../../io/abort.ts';
import type { Kernel, KernelIo, KernelRequest } from './kernels/kernel.ts';
import { KernelCache } from './kernel-cache.ts';
import { divisionIsExact } from './division.ts';
import { linearRequest } from './kernels/linear.ts';
import {
  FLAG_MODELS,
  FLAG_NON_FINITE,
  FLAG_OVERFLOW,
  flagCount,
  type MergeVariant,
} from './kernels/merge-bindings.ts';
import { ramRequest } from './kernels/ram.ts';
import { addStatsCounters, statsLayout, statsRequest } from './kernels/stats.ts';
import {
  addOverlapCounters,
  overlapCountRequest,
  emptyOverlapCounts,
  overlapCountGroups,
  overlapCountWords,
  type OverlapCounts,
} from './kernels/overlap_count.ts';
import { addBranchCounters, branchWords } from './kernels/branches.ts';
import { tiesMergeDispatch, tiesRequest } from './kernels/ties.ts';
import { TIE_CARRY_WORDS, topKScanRequest } from './kernels/topk_scan.ts';
import { spanMarkDispatch, tieMarkDispatch, topKTiesRequest } from './kernels/topk_ties.ts';
import { AGENT_BYTES, encodeAgents, encodeParams, type AgentParams, type WindowParams } from './layout.ts';
import {
  statsGroups,
  mergeGroups,
  pad4,
  driverMemory,
  slotBytesFor,
  splitDispatch,
  tensorWindows,
  tieRowsPerAgent,
  windowCapacity,
  windowElements,
  DEFAULT_MEMORY_BUDGET,
  DEFAULT_WINDOW_ELEMENTS,
  type Dispatch,
  type DriverMemory,
  type Window,
  TIE_BLOCK_PAIRS,
  TIE_BLOCK_WORDS,
  WORKGROUP_SIZE,
} from './plumbing.ts';
import { Scheduler } from './scheduler.ts';
import { BufferSets, engineBuffer, type BufferSet } from './buffer-sets.ts';
import { keptSlots, WindowCache } from './window-cache.ts';
import type { MethodParams } from '../../methods/types.ts';
import { bandCounts } from '../../methods/band.ts';
import { DEFAULT_GAMMA } from '../../methods/defaults.ts';
import { methodOf, type MethodPlan } from '../../methods/registry/index.ts';
import {
  endOnFirstWindows,
  TopKSelect,
  type SelectedTopK,
  type SelectRoute,
  type TieSpan,
} from './topk-select.ts';
import type { MergeEngine, MergeOptions, StageTimings, WindowCacheReport } from '../contract.ts';
import type { TensorInput, TensorStats } from '../../methods/tensors.ts';

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

/** The kernels of a merge's tie-break (GpuEngine.tieBreak). */
interface TieBreak {
  whole: Kernel | null;
  spans: { first: number; end: number; kernel: Kernel }[];
  scan: Kernel;
}

/** The statistics kernel keeps per-element agent sets in one u32 bitmask. */
export const MAX_GPU_AGENTS = 32;

/**
 * A top-k's ties to keep and the elements [first, end) they are marked in: with a span (the one chunk
 * that holds its first tie not kept) those counted from the span's first element; else everywhere, and
 * first and end are undefined (tieBreak marks whole windows for such a row).
 */
function tieMarks(
  s: SelectedTopK,
  spans: boolean,
): [toKeep: number, first: number | undefined, end: number | undefined] {
  return s.span && spans
    ? [s.tiesToKeep - s.span.before, s.span.first, s.span.end]
    : [s.tiesToKeep, undefined, undefined];
}

const noop = (): void => undefined;

/** The window cache's name for window `index` of the job numbered `job` (kept with the base). */
function keptTag(job: number, index: number): string {
  return `${job}/${index}`;
}

/** Whether set's inputs hold window w of job, with the base or (withBase false) without. */
function holding(set: BufferSet, job: Job, w: Window, withBase: boolean): boolean {
  const r = set.resident;
  return r !== null && r.job === job.serial && r.index === w.index && r.withBase === withBase;
}

/** A merge pass's kernel and its dispatch for the window's merge dispatch (one invocation per pair). */
interface MergeKernel {
  kernel: Kernel;
  dispatch(merge: Dispatch): Dispatch;
}

/** Tie-count blocks of a merge dispatch: WORKGROUP_SIZE / TIE_BLOCK_PAIRS per workgroup (window.wgsl). */
function tieBlocks(groups: number): number {
  return groups * (WORKGROUP_SIZE / TIE_BLOCK_PAIRS);
}

interface Job {
  serial: number;
  tensor: TensorInput;
  signal?: AbortSignal;
  inBytes: number;
  outBytes: number;
  /** Tie-count rows per agent the buffer sets hold for this job's merge. */
  tieRows: number;
  slotBytes: number;
  windows: Window[];
  /** The windows read from the files so far (of any pass). */
  read: Set<number>;
  /** The windows a buffer set let go of in a pass before the merge, kept or not (WindowCache.want). */
  wanted: Set<number>;
}

/** One buffer set's branch counters (kernels/branches.ts) and their own readback. */
interface BranchBuffers {
  counters: GPUBuffer;
  readback: GPUBuffer;
}

interface PassSpec {
  label: string;
  withBase: boolean;
  /** The windows in visiting order, where the pass's result does not depend on it (default: in order). */
  order?: readonly Window[];
  /**
   * A pass before the merge: each window of the tensor that a buffer set lets go is kept where the
   * budget has room (WindowCache), for the passes after it.
   */
  keep?: boolean;
  groups(w: Window): number;
  params(w: Window, d: Dispatch): WindowParams;
  encode(encoder: GPUCommandEncoder, set: BufferSet, w: Window, d: Dispatch): void;
  /**
   * Called once the last window is submitted, before its read-back: the engine's next call may
   * start (a merge's last pass passes it on, see merge()).
   */
  submitted?: () => void;
  result?: {
    source: 'output' | 'counters' | 'norms';
    /** Also read back the flags, at byte bytes(w) of the data consumed. */
    flags?: boolean;
    /** Also read back the set's branch counters (passed to consume). */
    branches?: boolean;
    bytes(w: Window): number;
    consume(w: Window, bytes: Uint8Array, branches?: Uint32Array): Promise<void> | void;
  };
}

export function createGpuEngine(device: GPUDevice, options: GpuEngineOptions): MergeEngine {
  return new GpuEngine(device, options);
}

class GpuEngine implements MergeEngine {
  readonly kind = 'gpu';
  readonly description: string;
  readonly agents: number;
  readonly driverMemory: DriverMemory;
  private readonly scheduler: Scheduler;
  private readonly maxWindow: number;
  private readonly memoryBudget: number;
  private readonly uploads: 'mapped' | 'copied';
  private readonly kernels: KernelCache;
  private readonly agentBuffer: GPUBuffer;
  private readonly carry: GPUBuffer;
  private readonly topK: TopKSelect<Job>;
  private readonly sets: BufferSets;
  /** Windows a pass before a merge uploaded, kept for it where the budget has room. */
  private readonly cache: WindowCache;
  /** Per buffer set (by window parity): the merge kernels' branch counters, bound whether or not they count. */
  private readonly branchBuffers: BranchBuffers[];
  /** Per set's io object (a new one whenever its inputs buffer changes): the io with its branch counters. */
  private readonly mergeIos = new WeakMap<KernelIo, KernelIo>();
  private serial = 0;
  private destroyed = false;
  /**
   * Calls share the buffer sets and the queue, so they start one after another in call order: a merge
   * once the one before has submitted its last window (its read-back and emits go on meanwhile),
   * anything else once the call before has settled. Never rejects.
   */
  private tail: Promise<void> = Promise.resolve();
  /** The last window's consume of any pass (never rejects): every consume waits for the one before. */
  private consumed: Promise<void> = Promise.resolve();
  /** The set the next window goes to when neither holds it already: sets alternate across tensors. */
  private nextSet = 0;

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
    this.maxWindow = options.maxWindowElements ?? DEFAULT_WINDOW_ELEMENTS;
    this.memoryBudget = options.memoryBudget ?? DEFAULT_MEMORY_BUDGET;
    this.uploads = options.uploads ?? 'mapped';
    // Windows are sized to the rest (windowElements).
    this.driverMemory = driverMemory(this.memoryBudget, this.agents, this.maxWindow);
    this.scheduler = new Scheduler(device, 'MergeEngine');
    this.kernels = new KernelCache(device);
    this.agentBuffer = this.buffer(
      'agents',
      n * AGENT_BYTES,
      GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    );
    // Two tie rows per agent (Model Breadcrumbs cuts ties at two thresholds), each with a cutoff.
    this.carry = this.buffer(
      'carry',
      TIE_CARRY_WORDS * n * 4,
      GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    );
    const branchBytes = branchWords(n) * 4;
    this.branchBuffers = [0, 1].map((i) => ({
      counters: this.buffer(
        `set${i}.branches`,
        branchBytes,
        GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      ),
      readback: this.buffer(
        `set${i}.branchReadback`,
        branchBytes,
        GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      ),
    }));
    this.sets = new BufferSets({
      device,
      agents: n,
      agentBuffer: this.agentBuffer,
      carry: this.carry,
      memoryBudget: this.memoryBudget,
      poisonOutput: options.poisonOutput ?? false,
    });
    this.cache = new WindowCache(device);
    this.topK = new TopKSelect<Job>({
      device,
      scheduler: this.scheduler,
      agents: n,
      agentBuffer: this.agentBuffer,
      kernel: (request) => this.kernel(request),
      sampled: options.topKSelect !== 'radix',
      ...(options.maxCollected !== undefined ? { maxCollected: options.maxCollected } : {}),
      ...(options.onSelectRoutes ? { onRoutes: options.onSelectRoutes } : {}),
      countPass: (job, pass) =>
        this.runPass(job, {
          label: pass.label,
          withBase: true,
          keep: true,
          order: pass.order,
          groups: (w) => pass.groups(w),
          params: (w, d) => ({ ...this.windowParams(job, w, d), ...pass.params(w, d) }),
          encode: (encoder, set, _w, d) => pass.encode(encoder, set.io, d),
        }),
    });
  }

  get timings(): StageTimings {
    return this.scheduler.timings;
  }

  get windowCache(): WindowCacheReport {
    return { ...this.cache.counts, bytes: this.cache.bytes, shortBytes: this.cache.shortBytes };
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
          const stats = emptyTensorStats(tensor.name, tensor.dtype, tensor.numel, this.agents);
          await this.statsPass(job, epsilon, stats, submitted);
          return deriveTensorStats(stats);
        }),
      onSubmitted,
    );
  }

  merge(tensor: TensorInput, options: MergeOptions): Promise<void> {
    return this.serialized(
      (submitted) => forTensor(tensor.name, () => this.mergeTensor(tensor, options, submitted)),
      options.onSubmitted,
    );
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.sets.destroy();
    this.cache.destroy();
    for (const b of [this.agentBuffer, this.carry]) b.destroy();
    for (const b of this.branchBuffers) for (const buffer of [b.counters, b.readback]) buffer.destroy();
    this.topK.destroy();
    this.kernels.destroy();
    this.scheduler.destroy();
  }

  /** `submitted`: called once the merge pass has submitted its last window (runPass). */
  private async mergeTensor(
    tensor: TensorInput,
    options: MergeOptions,
    submitted: () => void,
  ): Promise<void> {
    const { params, outDtype } = options;
    const lambdas = checkMergeOptions(options, this.agents);
    const outBytes = dtypeBits(outDtype) / 8;
    const { plan } = methodOf(params.method);
    const job = await this.job(tensor, options.signal, outBytes, tieRowsPerAgent(plan));
    const variant: MergeVariant = {
      inDtype: tensor.dtype,
      outDtype,
      agents: this.agents,
      correctDivision: this.options.correctDivision ?? !(await divisionIsExact(this.device)),
    };
    const dare = plan.sparsify === 'dare';
    const dareScales = dare ? await this.dareScales(job, params) : undefined;
    const agents: AgentParams[] = params.weights.map((weight, t) => ({
      weight,
      lambda: lambdas[t],
      ...(dare
        ? {
            keepBelow: dareKeepBelow(params.density[t]!),
            invDensity: Math.fround(dareScales?.[t] ?? dareScale(params.density[t]!)),
          }
        : {}),
    }));
    if (plan.lambdas === 'tensor') {
      const counts = await this.overlapCountPass(job, params.epsilon);
      const local = localLambdas(counts, params.r, params.alpha, params.epsilon);
      agents.forEach((a, t) => (a.lambda = local[t]));
    }
    const band = plan.sparsify === 'band';
    let tieBreak: TieBreak | null = null;
    if (plan.sparsify === 'topk' || band) {
      const selected = await this.thresholds(job, params);
      // Ties marked in the one chunk that holds the first tie not kept (element indices of the
      // kernels are 32-bit).
      const spans = tensor.numel < 2 ** 32;
      agents.forEach((a, t) => {
        const kept = selected[t]!;
        const [tiesToKeep, tieFirst, tieEnd] = tieMarks(kept, spans);
        Object.assign(a, { threshold: kept.threshold, tiesToKeep, tieFirst, tieEnd });
        const outlier = selected[this.agents + t];
        if (outlier) {
          const [outliersToDrop, outlierTieFirst, outlierTieEnd] = tieMarks(outlier, spans);
          Object.assign(a, {
            outlierThreshold: outlier.threshold,
            outliersToDrop,
            outlierTieFirst,
            outlierTieEnd,
          });
        }
      });
      // Only a threshold that keeps some but not all of its ties needs their ranks.
      if (selected.some((s) => s.tiesToKeep > 0)) tieBreak = await this.tieBreak(tensor.dtype, band, agents);
    }
    // Only a sparsified merge counts what it kept; RAM's and the dense merges' branches are the statistics'.
    const branches = plan.sparsify !== undefined ? options.branches : undefined;
    const merge = await this.mergeKernel(plan, variant, tieBreak !== null, branches !== undefined);
    const tieRows = job.tieRows * this.agents;
    this.scheduler.write(this.agentBuffer, 0, encodeAgents(agents));
    const nameHash = fnv1a32(tensor.name);
    const progressBytes = (this.agents + 1) * job.inBytes;
    const tally = new NonFiniteTally(this.agents + 1);
    await this.runPass(job, {
      label: params.method,
      withBase: plan.combine !== 'linear',
      groups: (w) => mergeGroups(w.count),
      params: (w, d) => ({
        ...this.windowParams(job, w, d),
        epsilon: params.epsilon,
        scale: params.lambda,
        nameHash,
        seed: params.seed,
        normalize: params.normalize,
      }),
      encode: (encoder, set, w, d) => {
        if (this.sets.poison) this.scheduler.write(set.output, 0, this.sets.poison, pad4(w.count * outBytes));
        if (tieBreak) {
          if (w.index === 0) encoder.clearBuffer(this.carry);
          encoder.clearBuffer(set.tieCounts, 0, tieRows * tieBlocks(d.groups) * TIE_BLOCK_WORDS * 4);
          const max = this.device.limits.maxComputeWorkgroupsPerDimension;
          tieBreak.whole?.encode(encoder, set.io, tieMarkDispatch(d, max));
          for (const span of tieBreak.spans)
            if (span.first >= w.start && span.first < w.start + w.count)
              span.kernel.encode(encoder, set.io, spanMarkDispatch(span.end - span.first, max));
          tieBreak.scan.encode(encoder, set.io, { x: 1, y: 1, groups: 1 });
        }
        encoder.clearBuffer(set.flags);
        if (branches) encoder.clearBuffer(this.branchSet(set).counters);
        merge.kernel.encode(encoder, this.mergeIo(set), merge.dispatch(d));
      },
      result: {
        source: 'output',
        flags: true,
        branches: branches !== undefined,
        bytes: (w) => pad4(w.count * outBytes),
        consume: async (w, bytes, counters) => {
          const flags = new Uint32Array(bytes.buffer, pad4(w.count * outBytes), flagCount(this.agents));
          tally.add(flags[FLAG_NON_FINITE]!, flags[FLAG_OVERFLOW]!, flags.subarray(FLAG_MODELS));
          if (branches && counters) addBranchCounters(branches, counters, this.agents, w.count);
          // After a bad window nothing more is emitted; the rest is only counted for the error.
          if (!tally.bad) await options.emit(bytes.subarray(0, w.count * outBytes));
          options.onProgress?.((w.start + w.count) * progressBytes);
        },
      },
      submitted,
    });
    tally.throwIfBad();
  }

  /**
   * The tie-break's kernels: the marks over whole windows for the agents without a span (and every
   * Model Breadcrumbs row), a marks dispatch per span, and the scan that finds each row's cutoff.
   */
  private async tieBreak(
    dtype: FloatDtype,
    band: boolean,
    agents: readonly AgentParams[],
  ): Promise<TieBreak> {
    // Every tie row that keeps part of its ties: agent t's kept top-k at row t, its outliers' at N + t.
    const rows = agents.flatMap((a, t) => [
      { row: t, keep: a.tiesToKeep ?? 0, first: a.tieFirst, end: a.tieEnd },
      ...(band
        ? [
            {
              row: this.agents + t,
              keep: a.outliersToDrop ?? 0,
              first: a.outlierTieFirst,
              end: a.outlierTieEnd,
            },
          ]
        : []),
    ]);
    const partial = rows.filter((r) => r.keep > 0);
    const whole = partial.some((r) => r.first === undefined)
      ? await this.kernel(topKTiesRequest(dtype, this.agents, band))
      : null;
    const spans: TieBreak['spans'] = [];
    for (const r of partial)
      if (r.first !== undefined && r.end !== undefined)
        spans.push({
          first: r.first,
          end: r.end,
          kernel: await this.kernel(topKTiesRequest(dtype, this.agents, band, r.row)),
        });
    const scan = await this.kernel(topKScanRequest(this.agents, band));
    return { whole, spans, scan };
  }

  /** The branch counters that go with a buffer set. */
  private branchSet(set: BufferSet): BranchBuffers {
    return at(this.branchBuffers, set.index, 'branch buffers');
  }

  /** The set's buffers and its branch counters, which the merge kernels bind. */
  private mergeIo(set: BufferSet): KernelIo {
    let io = this.mergeIos.get(set.io);
    if (!io) {
      io = { ...set.io, branches: this.branchSet(set).counters };
      this.mergeIos.set(set.io, io);
    }
    return io;
  }

  /**
   * The merge kernel the plan names (kernel ids are the plan's `combine`) and its dispatch for a
   * window's merge dispatch.
   */
  private async mergeKernel(
    plan: MethodPlan,
    variant: MergeVariant,
    tieBreak: boolean,
    countBranches: boolean,
  ): Promise<MergeKernel> {
    const dare = plan.sparsify === 'dare';
    const same = (kernel: Kernel): MergeKernel => ({ kernel, dispatch: (d) => d });
    switch (plan.combine) {
      case 'ram':
        return same(await this.kernel(ramRequest(variant)));
      case 'linear':
        return same(await this.kernel(linearRequest(variant)));
      case 'task_arithmetic':
      case 'ties': {
        const band = plan.sparsify === 'band';
        const consensus = plan.combine === 'ties';
        // Every sum of sparsified τ runs in the TIES kernel, with or without its sign election.
        const topK = plan.sparsify === 'topk' || band;
        const kernel = await this.kernel(
          tiesRequest(variant, { dare, topK, tieBreak, band, consensus, countBranches }),
        );
        const max = this.device.limits.maxComputeWorkgroupsPerDimension;
        return { kernel, dispatch: (d) => tiesMergeDispatch(d, max, countBranches) };
      }
    }
  }

  /** DARE's per-agent factors: from density alone (undefined), known at once, or by the norms pass. */
  private async dareScales(job: Job, params: MethodParams): Promise<number[] | undefined> {
    const plan = dareScalePlan(params);
    return plan === 'pass' ? await this.dareNormsPass(job, params) : plan;
  }

  /**
   * The top-k thresholds of a ranked sparsification: per agent its kept top-k (TIES); for Model
   * Breadcrumbs then, at N + t, agent t's outliers' top-k.
   */
  private async thresholds(job: Job, params: MethodParams): Promise<SelectedTopK[]> {
    const numel = job.tensor.numel;
    if (methodOf(params.method).plan.sparsify === 'topk')
      return this.selectTopK(
        job,
        params.density.map((d) => topKCount(d, numel)),
      );
    const bands = params.density.map((d, t) => bandCounts(d, params.gamma?.[t] ?? DEFAULT_GAMMA, numel));
    // One select for both: they share the first digit's histogram pass.
    return this.selectTopK(job, [...bands.map((b) => b.outliers + b.kept), ...bands.map((b) => b.outliers)]);
  }

  /** `submitted`: called once its last window is submitted (runPass). */
  private async statsPass(
    job: Job,
    epsilon: number,
    stats: TensorStats,
    submitted?: () => void,
  ): Promise<void> {
    const dtype = job.tensor.dtype;
    const kernel = await this.kernel(statsRequest(dtype, this.agents));
    await this.counterPass(job, epsilon, {
      label: 'stats',
      kernel,
      words: statsLayout(this.agents).count,
      groups: statsGroups,
      consume: (w, counters) => addStatsCounters(stats, counters, w.count),
      ...(submitted ? { submitted } : {}),
    });
  }

  /**
   * The pass before a tensor-local RAM+ merge: each agent's changed and unique counts, all its λ reads
   * (the statistics' rules, kernels/overlap_count.ts). It ends on the windows the merge starts with,
   * still resident.
   */
  private async overlapCountPass(job: Job, epsilon: number): Promise<OverlapCounts> {
    const dtype = job.tensor.dtype;
    const kernel = await this.kernel(overlapCountRequest(dtype, this.agents));
    const counts = emptyOverlapCounts(this.agents);
    await this.counterPass(job, epsilon, {
      label: 'overlap_count',
      kernel,
      words: overlapCountWords(this.agents),
      groups: overlapCountGroups,
      order: endOnFirstWindows(job.windows),
      keep: true,
      consume: (_w, counters) => addOverlapCounters(counts, counters),
    });
    return counts;
  }

  /** A counting pass at ε: per window the set's counters cleared, counted by `kernel`, read back. */
  private async counterPass(
    job: Job,
    epsilon: number,
    pass: {
      label: string;
      kernel: Kernel;
      words: number;
      groups: (count: number) => number;
      order?: readonly Window[];
      keep?: boolean;
      consume: (w: Window, counters: Uint32Array) => void;
      submitted?: () => void;
    },
  ): Promise<void> {
    const bytes = pass.words * 4;
    await this.runPass(job, {
      label: pass.label,
      withBase: true,
      ...(pass.order ? { order: pass.order } : {}),
      ...(pass.keep ? { keep: true } : {}),
      ...(pass.submitted ? { submitted: pass.submitted } : {}),
      groups: (w) => pass.groups(w.count),
      params: (w, d) => ({ ...this.windowParams(job, w, d), epsilon }),
      encode: (encoder, set, _w, d) => {
        encoder.clearBuffer(set.counters, 0, bytes);
        pass.kernel.encode(encoder, set.io, d);
      },
      result: {
        source: 'counters',
        bytes: () => bytes,
        consume: (w, data) => pass.consume(w, new Uint32Array(data.buffer, 0, pass.words)),
      },
    });
  }

  /** DARE's L1 rule: per agent ‖τ‖₁ / ‖m⊙τ‖₁ of the whole tensor, from partial sums added in f64. */
  private async dareNormsPass(job: Job, params: MethodParams): Promise<number[]> {
    const dtype = job.tensor.dtype;
    const kernel = await this.kernel(dareNormsRequest(dtype, this.agents));
    this.scheduler.write(
      this.agentBuffer,
      0,
      encodeAgents(params.density.map((d) => ({ keepBelow: dareKeepBelow(d) }))),
    );
    const norms = emptyDareNorms(this.agents);
    const bytes = dareNormsBytes(this.agents);
    const nameHash = fnv1a32(job.tensor.name);
    await this.runPass(job, {
      label: 'dare_norms',
      withBase: true,
      keep: true,
      groups: () => NORM_GROUPS,
      params: (w, d) => ({ ...this.windowParams(job, w, d), nameHash, seed: params.seed }),
      encode: (encoder, set, _w, d) => kernel.encode(encoder, set.io, d),
      result: {
        source: 'norms',
        bytes: () => bytes,
        consume: (_w, data) => addDareNorms(norms, new Float32Array(data.slice(0, bytes).buffer)),
      },
    });
    return l1Scales(norms);
  }

  /** Every requested top-k's threshold and ties to keep, counts[i] of agent i mod N (src/engine/gpu/topk-select.ts). */
  private selectTopK(job: Job, counts: readonly number[]): Promise<SelectedTopK[]> {
    return this.topK.select(job, counts);
  }

  /**
   * Runs one pass over the job's windows, two buffer sets in flight, results consumed in order: after
   * the windows before, and after every consume of the calls before (a merge emits after the last).
   */
  private async runPass(job: Job, pass: PassSpec): Promise<void> {
    let failure = null as { error: unknown } | null;
    const mine: Promise<void>[] = [];
    // Rejects once a window of this pass has failed; starts from the consumes before, which never do.
    let chain: Promise<void> = this.consumed;
    try {
      for (const w of pass.order ?? job.windows) {
        throwIfAborted(job.signal);
        const set = this.setFor(job, w, pass.withBase);
        await set.busy;
        if (failure) throw failure.error;
        await this.upload(job, set, w, pass.withBase, pass.keep ?? false);
        const d = splitDispatch(pass.groups(w), this.device.limits.maxComputeWorkgroupsPerDimension);
        this.scheduler.write(set.params, 0, encodeParams(pass.params(w, d)));
        const result = pass.result;
        const bytes = result ? result.bytes(w) : 0;
        const flagBytes = result?.flags ? set.flags.size : 0;
        const branches = result?.branches ? this.branchSet(set) : undefined;
        this.scheduler.submit(`${pass.label}[${w.index}]`, (encoder) => {
          pass.encode(encoder, set, w, d);
          if (result) encoder.copyBufferToBuffer(set[result.source], 0, set.readback, 0, bytes);
          if (flagBytes) encoder.copyBufferToBuffer(set.flags, 0, set.readback, bytes, flagBytes);
          if (branches)
            encoder.copyBufferToBuffer(branches.counters, 0, branches.readback, 0, branches.counters.size);
        });
        if (!result) continue;
        // Consumed in place, mapped: the set is not used again (set.busy) before both are released.
        const reading = this.scheduler.readMapped(set.readback, bytes + flagBytes);
        reading.catch(noop);
        const branchReading =
          branches && this.scheduler.readMapped(branches.readback, branches.readback.size);
        branchReading?.catch(noop);
        const previous = chain;
        chain = (async () => {
          try {
            const data = await reading;
            const counters = branchReading && (await branchReading).bytes;
            await previous;
            throwIfAborted(job.signal);
            await result.consume(
              w,
              data.bytes,
              counters && new Uint32Array(counters.buffer, counters.byteOffset, counters.byteLength / 4),
            );
          } finally {
            await Promise.all([reading, branchReading].map((r) => r?.then((m) => m.release(), noop)));
          }
        })();
        const settled = chain.then(noop, (error: unknown) => {
          failure ??= { error };
        });
        set.busy = settled;
        this.consumed = settled;
        mine.push(settled);
      }
      pass.submitted?.();
      await chain;
    } finally {
      // Nothing of this pass may still be mapping or emitting when the call returns.
      await Promise.all(mine);
    }
  }

  /**
   * The set window w goes to: the one that still holds it from the last pass (so it is not read
   * again), else the one after the last window's, across passes and tensors: the set a tensor's
   * first window goes to is the one the tensor before may have finished with.
   */
  private setFor(job: Job, w: Window, withBase: boolean): BufferSet {
    const sets = this.sets.sets;
    let index = sets.findIndex((s) => holding(s, job, w, withBase));
    if (index < 0) index = this.nextSet;
    this.nextSet = 1 - index;
    return at(sets, index, 'buffer set');
  }

  /**
   * Reads window w of every input into the set's staging memory and uploads it into the set's
   * inputs, unless they hold it already: mapped (the reads land in a MAP_WRITE buffer, copied into the
   * inputs on the GPU) or copied (they land in host memory that one writeBuffer copies): uploads.
   * A window the window cache holds is traded in instead; with `keep`, the window the set lets go is
   * kept there first (keepEvicted).
   */
  private async upload(job: Job, set: BufferSet, w: Window, withBase: boolean, keep: boolean): Promise<void> {
    if (holding(set, job, w, withBase)) return;
    if (keep) this.keepEvicted(job, set);
    set.resident = null;
    const started = performance.now();
    const used = w.count * job.inBytes;
    const padded = pad4(used);
    const first = withBase ? 0 : 1;
    const slots = Array.from({ length: this.agents + 1 - first }, (_, i) => first + i);
    const from = first * job.slotBytes;
    const bytes = this.agents * job.slotBytes + padded;
    // Kept by a pass before (with the base, which serves a pass without it as well): traded back in.
    const kept = this.cache.give(keptTag(job.serial, w.index), set.inputs);
    if (kept) {
      this.sets.swapInputs(set, kept);
      this.cache.reused(slots.length * used);
      this.holds(job, set, w, withBase);
      return;
    }
    if (job.read.has(w.index)) this.cache.reread(slots.length * used);
    job.read.add(w.index);
    const buffer = this.uploads === 'mapped' ? this.sets.staging(set) : null;
    let staging: Uint8Array;
    if (buffer) {
      set.stagingMapped ??= this.scheduler.mapForWrite(buffer);
      await set.stagingMapped;
      // The window's bytes only: each range is a new ArrayBuffer that V8 counts as external memory,
      // and whole 64 MiB ranges for small tensors made it collect garbage every few windows.
      staging = this.scheduler.mappedRange(buffer, bytes);
    } else staging = this.sets.hostStaging(set);
    // allSettled: no read may still be writing into the staging memory when this returns.
    const reads = await Promise.allSettled(
      slots.map((k) =>
        job.tensor.read(k, w.start, w.count, staging.subarray(k * job.slotBytes, k * job.slotBytes + used)),
      ),
    );
    const failed = reads.find((r) => r.status === 'rejected');
    // Each slot's last partial word zero-padded.
    for (const k of slots) staging.fill(0, k * job.slotBytes + used, k * job.slotBytes + padded);
    if (buffer) {
      // Unmapped whether or not the reads succeeded: its range is handed out once per mapping.
      buffer.unmap();
      set.stagingMapped = null;
    }
    if (failed) throw failed.reason;
    this.scheduler.addUploadTime(performance.now() - started);
    if (buffer) {
      this.scheduler.submit('upload', (encoder) =>
        encoder.copyBufferToBuffer(buffer, from, set.inputs, from, bytes - from),
      );
      // Mapped again as soon as the copy is done, so that the next window's reads need not wait.
      const mapping = this.scheduler.mapForWrite(buffer);
      mapping.catch(noop);
      set.stagingMapped = mapping;
    } else {
      // Written once the queue has drained: a write while kernels still run finds Dawn's staging
      // memory in use and stages into new memory, which the device clears first (the studio's GPU
      // process spent 3.2–5.8 CPU-s of its main thread per TIES or ramplus_tl merge there, in memset
      // and page faults; 0.8–1.8 s with the wait). The reads above went on meanwhile.
      await this.scheduler.idle();
      this.scheduler.write(set.inputs, from, staging.subarray(from, bytes));
    }
    this.holds(job, set, w, withBase);
  }

  /** Notes that set holds window w of job (with or without the base). */
  private holds(job: Job, set: BufferSet, w: Window, withBase: boolean): void {
    set.resident = { job: job.serial, index: w.index, withBase };
  }

  /**
   * Before set lets go of a window of this job that it holds with the base: the window cache takes
   * the set's inputs buffer, where it has room, and the set takes a spare one.
   */
  private keepEvicted(job: Job, set: BufferSet): void {
    const held = set.resident;
    if (held?.job !== job.serial || !held.withBase) return;
    job.wanted.add(held.index);
    this.cache.want(job.wanted.size);
    const spare = this.cache.take(set.inputs, keptTag(held.job, held.index), job.serial);
    if (spare) this.sets.swapInputs(set, spare);
  }

  private windowParams(job: Job, w: Window, d: Dispatch): WindowParams {
    return { count: w.count, slotWords: job.slotBytes / 4, start: w.start, groupsX: d.x, groups: d.groups };
  }

  /** `tieRows`: tie-count rows per agent the job's merge ranks ties in (tieRowsPerAgent). */
  private async job(
    tensor: TensorInput,
    signal: AbortSignal | undefined,
    outBytes: number,
    tieRows: number,
  ): Promise<Job> {
    if (this.destroyed) throw new Error('this GPU engine has been destroyed');
    this.scheduler.check();
    if (!Number.isSafeInteger(tensor.numel) || tensor.numel < 0)
      throw new RangeError(`bad element count ${tensor.numel}`);
    const inBytes = dtypeBits(tensor.dtype) / 8;
    const limits = this.device.limits;
    const size = Math.max(
      1,
      Math.min(
        tensor.numel,
        windowElements({
          agents: this.agents,
          inBytes,
          outBytes,
          tieRows,
          maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
          maxBufferSize: limits.maxBufferSize,
          maxComputeWorkgroupsPerDimension: limits.maxComputeWorkgroupsPerDimension,
          maxWindowElements: this.maxWindow,
          memoryBudget: this.memoryBudget,
        }),
      ),
    );
    const slotBytes = slotBytesFor(size, inBytes);
    await this.sets.ensure(windowCapacity(size, this.agents, inBytes, outBytes, tieRows));
    const room = this.sets.room;
    this.cache.fit(room.inputBytes, keptSlots(this.memoryBudget, room, this.driverMemory));
    return {
      serial: ++this.serial,
      tensor,
      signal,
      inBytes,
      outBytes,
      tieRows,
      slotBytes,
      windows: tensorWindows(tensor.numel, size),
      read: new Set(),
      wanted: new Set(),
    };
  }

  private buffer(name: string, size: number, usage: GPUBufferUsageFlags): GPUBuffer {
    return engineBuffer(this.device, name, size, usage);
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

  private kernel(request: KernelRequest): Promise<Kernel> {
    return this.kernels.get(request);
  }
}

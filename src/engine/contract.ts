// The contract between the model-level driver and a merge engine (GPU or CPU reference): the
// engine works one tensor at a time and reads the windows it needs through a callback.

import { isAbortError } from '../io/abort.ts';
import type { MethodParams } from '../methods/types.ts';
import type { FloatDtype } from '../format/dtype.ts';
import { methodOf } from '../methods/registry/index.ts';
import type { BranchCounts, TensorInput, TensorStats } from '../methods/tensors.ts';
import type { LowRankProduct } from '../methods/lora.ts';

export interface MergeOptions {
  params: MethodParams;
  /** λ_t per agent for ram / ramplus / ramplus_soft (global ρ, from the statistics pass). Ignored otherwise. */
  lambdas: number[];
  outDtype: FloatDtype;
  signal?: AbortSignal;
  /**
   * Output bytes in order, exactly numel × out element bytes in total. Awaited before more are sent.
   * The bytes are lent until the promise resolves: a receiver that keeps them copies them (the GPU
   * engine emits straight from its mapped read-back buffer, detached once emit resolves; the driver's
   * writeBehind copies what it queues into reused memory).
   */
  emit(bytes: Uint8Array): Promise<void>;
  /** Input bytes consumed so far for this tensor (for progress). */
  onProgress?(inputBytesDone: number): void;
  /**
   * Where given, a merge whose plan sparsifies τ (DARE, top-k, band) adds this tensor's branch counts
   * into it; other merges leave it as it is (and cost nothing more).
   */
  branches?: BranchCounts;
  /**
   * Where given, an engine that pipelines tensors calls it once it has read, uploaded and submitted
   * all of this tensor's work, before its results are read back and emitted: the caller may then
   * call merge() for the next tensor, which the engine starts at once and whose output it emits after
   * this one's. An engine that does not pipeline never calls it (the caller waits for the merge).
   */
  onSubmitted?(): void;
  /**
   * Where the method's λ is per tensor (`ramplus_tl`), called once with the λ each agent's unique
   * changes got in this tensor.
   */
  onTensorLambdas?(lambdas: readonly number[]): void;
}

export interface MergeEngine {
  readonly kind: 'gpu' | 'cpu';
  /** Human-readable adapter or "CPU reference". */
  readonly description: string;
  /** Number of agents N this engine was created for. */
  readonly agents: number;
  /**
   * Bytes of its memory budget the engine leaves to the driver: `readAhead` for the next tensor's
   * first bytes, read while this one merges (src/driver/read-ahead.ts), `writeBehind` for output
   * queued to the file system (writeBehind, src/io/sink.ts). Absent: the driver does neither.
   */
  readonly driverMemory?: { readAhead: number; writeBehind: number };
  /** Cumulative stage times, where the engine measures them (the GPU engine). */
  readonly timings?: StageTimings;
  /** What its window cache did, where the engine keeps windows between passes (the GPU engine). */
  readonly windowCache?: WindowCacheReport;
  /** `onSubmitted`: as MergeOptions.onSubmitted, for the statistics of the next tensor. */
  analyze(
    tensor: TensorInput,
    epsilon: number,
    signal?: AbortSignal,
    onSubmitted?: () => void,
  ): Promise<TensorStats>;
  merge(tensor: TensorInput, options: MergeOptions): Promise<void>;
  /**
   * The low-rank product of a LoRA agent's τ rows (src/methods/lora.ts), where the engine has a kernel
   * for it (the GPU engine); absent, the driver's adapter agents use the CPU's. It may be called while
   * a merge reads its windows, so it never waits for the engine's calls.
   */
  readonly product?: LowRankProduct;
  destroy(): void;
}

/**
 * What a GPU engine's window cache (src/engine/gpu/window-cache.ts) did since the engine was made: the
 * windows a pass before a merge kept on the GPU, those the next passes took from it instead of reading
 * them again, and the bytes read again for want of room.
 */
export interface WindowCacheReport {
  /** Windows the cache took from a buffer set as it let them go. */
  kept: number;
  /** Windows taken from it instead of being read again, and their bytes of inputs. */
  reused: number;
  reusedBytes: number;
  /** Bytes of inputs read again for want of room. */
  rereadBytes: number;
  /** The most windows of one tensor its passes would have kept, room or not. */
  wanted: number;
  /** Bytes the cache holds now. */
  bytes: number;
  /** Bytes more of memory budget that would have kept every window its passes wanted kept. */
  shortBytes: number;
}

/** Cumulative wall time an engine spent per stage, in milliseconds (stages overlap when pipelined). */
export interface StageTimings {
  upload: number;
  compute: number;
  readback: number;
}

/** A failure while processing one tensor; `cause` holds the original (e.g. a GpuDeviceError). */
export class EngineTensorError extends Error {
  override readonly name = 'EngineTensorError';
  constructor(
    readonly tensor: string,
    cause: unknown,
  ) {
    super(`tensor "${tensor}": ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** Runs one tensor's work, naming the tensor in any failure except an abort. */
export async function forTensor<T>(name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (isAbortError(error)) throw error;
    throw new EngineTensorError(name, error);
  }
}

/**
 * The per-agent λ a RAM-family merge uses: the driver's global λ for the methods whose λ come from the
 * whole model's statistics (`ramplus`, `ramplus_soft`), else 1 (SPEC.md). Also checks that weights and densities cover the N agents.
 */
export function checkMergeOptions(options: MergeOptions, agents: number): number[] {
  const { params, lambdas } = options;
  if (params.weights.length !== agents || params.density.length !== agents) {
    throw new RangeError(
      `expected ${agents} weights and densities, got ${params.weights.length} and ${params.density.length}`,
    );
  }
  if (methodOf(params.method).plan.lambdas === 'global') {
    if (lambdas.length !== agents) throw new RangeError(`expected ${agents} lambdas, got ${lambdas.length}`);
    return [...lambdas];
  }
  return new Array<number>(agents).fill(1);
}

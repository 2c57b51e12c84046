// The contract between the model-level driver and a merge engine (GPU or CPU reference): the
// engine works one tensor at a time and reads the windows it needs through a callback.

import type { FloatDtype } from '../format/dtype.ts';
import type { MethodParams } from './types.ts';

/** One floating-point tensor present in the base and every agent, with the same shape and dtype. */
export interface TensorInput {
  name: string;
  numel: number;
  dtype: FloatDtype;
  /**
   * Reads elements [start, start + count) of input `index` (0 = base, 1..N = agents) as raw
   * little-endian bytes into `into` (exactly count × element bytes long).
   */
  read(index: number, start: number, count: number, into: Uint8Array): Promise<void>;
}

/** Exact integer statistics of one tensor. Every array indexed by agent has N entries. */
export interface TensorStats {
  name: string;
  dtype: FloatDtype;
  numel: number;
  /** counts[c] = elements changed by exactly c agents, c = 0..N; Σ counts = numel − nonFinite. */
  counts: number[];
  /** Elements whose bits differ between the models and where one of them holds NaN or ±Inf (not classified). */
  nonFinite: number;
  /** nonFiniteModels[m]: of those, the elements where model m (0 = base, t + 1 = agent t) holds NaN or ±Inf. */
  nonFiniteModels: number[];
  /** overlap[t][k] = elements changed by agent t and exactly k other agents, k = 0..N-1. */
  overlap: number[][];
  /** Σ_k overlap[t][k]. */
  changed: number[];
  /** overlap[t][0]. */
  unique: number[];
  /** Shared elements (c ≥ 2) whose contributing agents' τ do not all have one sign. */
  signConflicts: number;
  /** magnitude[t][b]: changed elements of agent t whose |τ| falls in MAGNITUDE_BINS bin b. */
  magnitude: number[][];
  /** Changed elements of agent t whose |τ| is at most one ulp of the base value in the tensor's dtype. */
  oneUlp: number[];
  /** pairs[t][u] = elements changed by both t and u (pairs[t][t] = changed[t]); present when N ≤ 8. */
  pairs?: number[][];
  /**
   * sets[m] = finite elements changed by exactly the agents of bitmask m (bit t: agent t), so
   * sets[0] = counts[0]; present when N ≤ 8 (the UpSet view's intersections).
   */
  sets?: number[];
}

/**
 * What a sparsifying merge kept (src/engine/merge-branches.ts gives the exact definitions): counts[c]
 * elements summed from exactly c agents (c = 0..N), unique[t] those summed from agent t alone, and
 * signConflicts those where agents' non-zero w·τ̂ disagreed in sign.
 */
export interface BranchCounts {
  counts: number[];
  unique: number[];
  signConflicts: number;
}

export function emptyBranchCounts(agents: number): BranchCounts {
  return {
    counts: new Array<number>(agents + 1).fill(0),
    unique: new Array<number>(agents).fill(0),
    signConflicts: 0,
  };
}

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
}

export interface MergeEngine {
  readonly kind: 'gpu' | 'cpu';
  /** Human-readable adapter or "CPU reference". */
  readonly description: string;
  /** Number of agents N this engine was created for. */
  readonly agents: number;
  /**
   * Bytes of its memory budget the engine leaves to the driver: `readAhead` for the next tensor's
   * first bytes, read while this one merges (src/engine/read-ahead.ts), `writeBehind` for output
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
  destroy(): void;
}

/**
 * What a GPU engine's window cache (src/engine/window-cache.ts) did since the engine was made: the
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

// The data the merge math works on, shared by the CPU reference and both engines: one tensor's inputs
// (read through a callback, a window at a time), its exact statistics, and what a sparsifying merge kept.

import { dtypeBits, type FloatDtype } from '../format/dtype.ts';
import { at } from '../io/checked.ts';

/** One floating-point tensor present in the base and every agent, with the same shape and dtype. */
export interface TensorInput {
  name: string;
  numel: number;
  dtype: FloatDtype;
  /** Its shape, where a method ranks by rows; absent: one row of every element. */
  shape?: readonly number[];
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
 * What a sparsifying merge kept (src/driver/merge-branches.ts gives the exact definitions): counts[c]
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

/** Wraps raw input bytes as a TensorInput whose reads copy the requested range. */
export function tensorInput(
  name: string,
  dtype: FloatDtype,
  bytes: readonly Uint8Array[],
  shape?: readonly number[],
): TensorInput {
  const size = dtypeBits(dtype) / 8;
  return {
    name,
    dtype,
    ...(shape ? { shape } : {}),
    numel: at(bytes, 0, 'the base input').byteLength / size,
    async read(index, start, count, into) {
      const source = bytes[index];
      if (!source) throw new RangeError(`no input ${index}`);
      if (into.byteLength !== count * size) throw new RangeError('read buffer of the wrong size');
      into.set(source.subarray(start * size, (start + count) * size));
    },
  };
}

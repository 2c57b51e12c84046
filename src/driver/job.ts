// A merge job as data: what the driver is given (models, engine, recipe, sink), what it reports while
// it runs, what it returns, and the errors it raises. The driver (driver.ts), the model card
// (model-card.ts), the worker and the CLI all speak these.

import type { CompatReport } from '../format/compat.ts';
import type { FloatDtype } from '../format/dtype.ts';
import type { Model } from '../format/model.ts';
import type { ReadDtype } from '../format/precision.ts';
import type { FolderSink } from '../io/sink.ts';
import type { StreamHash } from '../io/sha256-offload.ts';
import type { ModelStats } from '../methods/stats.ts';
import type { Recipe } from '../methods/recipe.ts';
import type { MethodParams } from '../methods/types.ts';
import type { TensorStats } from '../methods/tensors.ts';
import type { MergeEngine, WindowCacheReport } from '../engine/contract.ts';
import type { MergeBranches } from './merge-branches.ts';

export type Stage = 'analyze' | 'merge' | 'verify';

export interface Progress {
  stage: Stage;
  tensorsDone: number;
  tensorsTotal: number;
  /** Input bytes read so far in this stage (raw copies count once). */
  bytesDone: number;
  bytesTotal: number;
  currentTensor?: string;
  elapsedMs: number;
  bytesPerSecond: number;
  /** Estimated time left in this stage; undefined until there is a rate. */
  etaMs?: number;
}

export class MergeError extends Error {
  override name = 'MergeError';
  constructor(
    message: string,
    readonly tensor?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class CompatibilityError extends MergeError {
  override name = 'CompatibilityError';
  constructor(readonly report: CompatReport) {
    const lines = report.issues
      .slice(0, 20)
      .map((issue) => `  ${issue.model}: ${issue.tensor}: ${issue.detail}`);
    const more = report.issues.length > 20 ? `\n  … and ${report.issues.length - 20} more` : '';
    super(
      `The models do not match (${report.issues.length} difference${report.issues.length === 1 ? '' : 's'}):\n` +
        lines.join('\n') +
        more,
    );
  }
}

export interface ModelsInput {
  base: Model;
  agents: Model[];
  engine: MergeEngine;
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
  /**
   * false: the driver neither reads the next tensor ahead (ReadAhead) nor writes output behind the
   * merge (writeBehind), for benchmarks to compare. Default true, within the engine's driverMemory.
   */
  overlap?: boolean;
  /**
   * The read precision D (SPEC.md "Inputs stored in other precisions"); undefined: each tensor as
   * stored where every model stores it alike, else at the base's dtype.
   */
  readDtype?: ReadDtype;
}

/** What reading at the read precision D did to the statistics (precision-stats.ts). */
export interface PrecisionSummary {
  /** The read precision asked; 'default' where none was (stored, or the base's dtype where models differ). */
  readDtype: ReadDtype | 'default';
  /** Merged tensors whose values D rounds in some model. */
  roundedTensors: number;
  /** Elements of the merged tensors. */
  numel: number;
  /** Per agent: changed elements at D (the statistics'), and at stored precision. */
  changedAtRead: number[];
  changedStored: number[];
  /** Per agent, changed elements at bf16: only for a set stored all in f32 where one agent's τ is dense. */
  changedBf16?: number[];
  /** One line per agent where the rounding removed changes, or the hint: what to do about a dense τ. */
  lines: string[];
}

export interface AnalysisResult {
  epsilon: number;
  tensors: TensorStats[];
  totals: ModelStats;
  /** The weights files the statistics came from, where the host identified them (statsFiles). */
  files?: StatsFile[];
  /**
   * What reading at the read precision did (precision-stats.ts), where it did something: the studio's
   * statistics show its lines and its JSON export writes it as `analyze --json` does.
   */
  precision?: PrecisionSummary;
}

/**
 * One weights file the statistics were gathered from: `merge --stats-in` reuses them only for files of
 * the same size and safetensors header (names, dtypes, shapes and offsets of every tensor).
 */
export interface StatsFile {
  /** 0 = base, t + 1 = agent t. */
  model: number;
  file: string;
  bytes: number;
  headerSha256: string;
}

export interface MergeJob extends ModelsInput {
  params: MethodParams;
  /** Output dtype of merged tensors; undefined keeps each tensor's own dtype. */
  outDtype?: FloatDtype;
  shardBytes?: number;
  out: FolderSink;
  /** Names of the inputs as the recipe and the model card should show them. */
  baseLabel: string;
  agentLabels: string[];
  /** The merge's name, the model card's title (the studio's Name field); absent: "Merged model (method)". */
  name?: string;
  /** Statistics from an earlier pass with the same ε (the studio caches them); computed when needed and absent. */
  analysis?: AnalysisResult;
  /** The recipe with the inputs' paths, for mergekit_config.yml and the card; absent: labels and `params`. */
  recipe?: Recipe;
  /** Per-tensor parameters (a recipe's gradients and filters); absent: `params` for every tensor. */
  perTensor?: (name: string) => MethodParams;
  /** The input files with their sha256, for the model card; awaited after the shards are written. */
  inputFiles?: () => Promise<InputFile[]>;
  /** A new hash for each shard written (default: Sha256 on this thread; the studio hashes off it). */
  shardHash?: () => StreamHash;
}

export interface InputFile {
  /** The model's label (baseLabel or one of agentLabels). */
  model: string;
  file: string;
  bytes: number;
  sha256: string;
}

export interface WrittenFile {
  file: string;
  bytes: number;
  sha256?: string;
}

export interface MergeResult {
  files: WrittenFile[];
  lambdas: number[];
  /** Where λ is per tensor (`ramplus_tl`): each tensor's λ per agent, in merge order. */
  tensorLambdas?: Map<string, readonly number[]>;
  analysis?: AnalysisResult;
  /**
   * Elements per branch, as written to merge_branches.json (merge-branches.ts): counted in a sparsifying
   * merge, else the statistics it used; null for a dense merge without statistics.
   */
  branches: MergeBranches | null;
  mergedTensors: number;
  /** Merged tensors whose first bytes the driver had read ahead while the one before merged (ReadAhead). */
  readAheadTensors: number;
  copiedTensors: number;
  outputBytes: number;
  /** What the merge left out and why (a companion file that is not what its name says), for the user. */
  warnings: string[];
}

/**
 * One sentence on what the cache did in a merge, for the CLI and the studio: the bytes it spared
 * reading and, where windows were read again, the memory budget that would have kept them, as
 * `budgetHint` words it. Null where no pass wanted a window kept (RAM, and every tensor the two buffer
 * sets hold whole).
 */
export function describeWindowCache(
  report: WindowCacheReport,
  budget: number,
  format: (bytes: number) => string,
  budgetHint: (bytes: number) => string,
): string | null {
  if (report.wanted === 0) return null;
  const spared = `Windows kept on the GPU between passes spared reading ${format(report.reusedBytes)}`;
  if (report.rereadBytes === 0) return `${spared}: every input was read once.`;
  return (
    `${spared}; ${format(report.rereadBytes)} were read again for want of room ` +
    `(${budgetHint(budget + report.shortBytes)} would keep them).`
  );
}

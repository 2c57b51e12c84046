// Errors and argument checks that the GPU and CPU engines share, so callers see one behaviour.

import type { MergeOptions } from './merge-types.ts';
import { methodOf } from './registry/index.ts';

/** The error thrown when a merge or analysis is cancelled through its AbortSignal. */
export function abortError(): Error {
  return new DOMException('The merge was aborted', 'AbortError');
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError();
}

export function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
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

/**
 * A tensor that cannot be merged (SPEC.md "Non-finite values"): elements whose bits differ between
 * the models and where one holds NaN or ±Inf, or finite merged values that overflow to ±Inf in the
 * output dtype. Counts are over the whole tensor; perModel is indexed base first.
 */
export class NonFiniteError extends Error {
  override readonly name = 'NonFiniteError';
  constructor(
    readonly nonFinite: number,
    readonly perModel: readonly number[],
    readonly overflow: number,
  ) {
    super(
      nonFinite > 0
        ? `${plural(nonFinite, 'element')} hold NaN or ±Inf where the models differ (` +
            perModel
              .map((count, m) => (count > 0 ? `${m === 0 ? 'base' : `agent ${m}`}: ${count}` : ''))
              .filter(Boolean)
              .join(', ') +
            ')'
        : `${plural(overflow, 'merged value')} overflow to ±Inf in the output dtype`,
    );
  }
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** Counts of a tensor's bad elements, summed over its windows by the engines. */
export class NonFiniteTally {
  nonFinite = 0;
  overflow = 0;
  readonly perModel: number[];
  constructor(models: number) {
    this.perModel = new Array<number>(models).fill(0);
  }
  get bad(): boolean {
    return this.nonFinite > 0 || this.overflow > 0;
  }
  add(nonFinite: number, overflow: number, perModel: ArrayLike<number>): void {
    this.nonFinite += nonFinite;
    this.overflow += overflow;
    for (let m = 0; m < this.perModel.length; m++) this.perModel[m]! += perModel[m] ?? 0;
  }
  throwIfBad(): void {
    if (this.bad) throw new NonFiniteError(this.nonFinite, this.perModel, this.overflow);
  }
}

/** The NonFiniteError behind an engine or driver error, if that is what it is. */
export function nonFiniteCause(error: unknown): NonFiniteError | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) if (e instanceof NonFiniteError) return e;
  return undefined;
}

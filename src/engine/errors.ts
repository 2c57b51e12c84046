// Errors and argument checks that the GPU and CPU engines share, so callers see one behaviour.

import type { MergeOptions } from './types.ts';

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
 * The per-agent λ a RAM-family merge uses: 1 for `ram` (SPEC.md), the driver's global λ for `ramplus`
 * and `ramplus_soft`. Also checks that weights and densities cover the N agents.
 */
export function checkMergeOptions(options: MergeOptions, agents: number): number[] {
  const { params, lambdas } = options;
  if (params.weights.length !== agents || params.density.length !== agents) {
    throw new RangeError(
      `expected ${agents} weights and densities, got ${params.weights.length} and ${params.density.length}`,
    );
  }
  if (params.method === 'ramplus' || params.method === 'ramplus_soft') {
    if (lambdas.length !== agents) throw new RangeError(`expected ${agents} lambdas, got ${lambdas.length}`);
    return [...lambdas];
  }
  return new Array<number>(agents).fill(1);
}

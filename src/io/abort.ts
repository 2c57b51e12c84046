// Cancellation, one way everywhere: an AbortSignal's own throwIfAborted(), an AbortError that names
// what was cancelled, and one test for it (the worker and the CLI tell a cancel from a failure by name).

/** A DOMException named AbortError, the shape `signal.throwIfAborted()` throws, with a message that says what stopped. */
export function abortError(message = 'The merge was cancelled.'): DOMException {
  return new DOMException(message, 'AbortError');
}

/**
 * `signal.throwIfAborted()`, with the message saying what was cancelled (the platform's own reason
 * reads "signal is aborted without reason", which the studio and the CLI would show as it is).
 */
export function throwIfAborted(signal: AbortSignal | undefined, message?: string): void {
  if (signal?.aborted) throw abortError(message);
}

export function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

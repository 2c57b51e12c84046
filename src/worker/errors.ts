// How the engine worker's failures reach the page: plain-data error details (file, tensor, compat
// report) and the named refusals the page shows as they are.
import { SafetensorsError } from '../io/errors.ts';
import { EngineTensorError } from '../engine/contract.ts';
import { CompatibilityError, MergeError } from '../driver/job.ts';
import type { WorkerErrorInfo } from './protocol.ts';

export function errorInfo(error: unknown): WorkerErrorInfo {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const info: WorkerErrorInfo = { name: error.name, message: error.message };
  if (error instanceof SafetensorsError) {
    info.file = error.file;
    info.code = error.code;
    if (error.tensor !== undefined) info.tensor = error.tensor;
  }
  if (error instanceof MergeError && error.tensor !== undefined) info.tensor = error.tensor;
  if (error instanceof EngineTensorError) info.tensor = error.tensor;
  if (error instanceof CompatibilityError) info.compat = error.report;
  const named = (error as { file?: unknown }).file;
  if (typeof named === 'string') info.file ??= named;
  // The driver wraps engine failures; the innermost file or tensor name is the useful one.
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof SafetensorsError) {
    info.file ??= cause.file;
    info.code ??= cause.code;
  }
  return info;
}

/** A failure the page shows as it is: its name is the kind of refusal, its message says what to do. */
export function refusal(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

// The one error type of checkpoint reading and writing: a code per failure, the file (and tensor)
// it concerns, and a message that says what is wrong and what to do about it.

export type SafetensorsErrorCode =
  | 'HeaderTooSmall'
  | 'HeaderTooLarge'
  | 'GitLfsPointer'
  | 'InvalidHeaderLength'
  | 'InvalidHeader'
  | 'InvalidHeaderDeserialization'
  | 'InvalidOffset'
  | 'ValidationOverflow'
  | 'MisalignedSlice'
  | 'TensorInvalidInfo'
  | 'MetadataIncompleteBuffer'
  | 'InvalidIndex'
  | 'MissingShard'
  | 'TensorNotInShard'
  | 'TensorNotInIndex'
  | 'DuplicateTensor'
  | 'UnsafePath'
  | 'AmbiguousModel'
  | 'PickleRefused'
  | 'NoWeights'
  | 'InvalidName'
  | 'HeaderTooLargeToWrite'
  | 'WriteMismatch'
  | 'ReadFailed';

export interface SafetensorsErrorOptions {
  tensor?: string;
  cause?: unknown;
}

export class SafetensorsError extends Error {
  override readonly name = 'SafetensorsError';
  readonly code: SafetensorsErrorCode;
  readonly file: string;
  readonly tensor?: string;

  /** `detail` is the "what is wrong. what to do." part; file and tensor are prefixed here. */
  constructor(
    code: SafetensorsErrorCode,
    file: string,
    detail: string,
    options: SafetensorsErrorOptions = {},
  ) {
    const prefix = [file, options.tensor === undefined ? undefined : printableName(options.tensor)]
      .filter((part) => part !== undefined && part !== '')
      .join(': ');
    super(
      prefix ? `${prefix}: ${detail}` : detail,
      options.cause === undefined ? {} : { cause: options.cause },
    );
    this.code = code;
    this.file = file;
    if (options.tensor !== undefined) this.tensor = options.tensor;
  }
}

/** A name as it can be shown in a message: JSON-quoted when it holds control or odd characters. */
export function printableName(name: string): string {
  return /^[\x20-\x7e\u{a0}-\u{d7ff}\u{e000}-\u{10ffff}]+$/u.test(name) ? name : JSON.stringify(name);
}

/** Turns any failure of a platform read into ReadFailed naming the file; our own errors pass through. */
export function asReadFailed(file: string, error: unknown, what: string): SafetensorsError {
  if (error instanceof SafetensorsError) return error;
  const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const changed =
    error instanceof Error && error.name === 'NotReadableError'
      ? ' The file changed or moved since it was chosen: choose it again.'
      : ' Check that the file is still there and readable.';
  return new SafetensorsError('ReadFailed', file, `could not read ${what} (${reason}).${changed}`, {
    cause: error,
  });
}

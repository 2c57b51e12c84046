// Random-access byte sources: the one way the format reader and the engine read checkpoint bytes,
// whether they come from memory, a browser File or a Node file handle.

import { SafetensorsError } from './errors.ts';

export interface ByteSource {
  readonly name: string;
  readonly size: number;
  /**
   * Reads exactly `length` bytes at `offset`: into `into` (at least `length` long) when given, and
   * then returns `into.subarray(0, length)`. Throws SafetensorsError ReadFailed if the range is
   * outside the source or the source delivers fewer bytes.
   */
  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
}

/** One file of a model folder: the format layer opens a model from these, io makes them. */
export interface ModelFile {
  /** The file name within the model folder (no directories). */
  name: string;
  source: ByteSource;
  /**
   * Where the name is a symbolic link (Node only; a browser's pickers show none): its resolved target,
   * and whether that stays inside the model folder or the Hugging Face cache layout the folder is part
   * of (`snapshots/REV/NAME` -> `blobs/HASH` of the same repository). Files copied into a merged
   * folder are followed only where `contained`: a link elsewhere may reach anything (a private key).
   */
  link?: { target: string; contained: boolean };
}

/** Validates a read request against a source of `size` bytes (and `into`, when given). */
export function checkRead(
  name: string,
  size: number,
  offset: number,
  length: number,
  into?: Uint8Array,
): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0) {
    throw new SafetensorsError('ReadFailed', name, `invalid read of ${length} bytes at offset ${offset}.`);
  }
  if (offset + length > size) {
    throw new SafetensorsError(
      'ReadFailed',
      name,
      `read of bytes ${offset}..${offset + length} is past the end of the file (${size} bytes). The file is shorter than expected: was it truncated?`,
    );
  }
  if (into !== undefined && into.length < length) {
    throw new SafetensorsError(
      'ReadFailed',
      name,
      `read buffer of ${into.length} bytes is smaller than the ${length} bytes asked for.`,
    );
  }
}

/** checkRead, then the buffer to fill: a view of `into`, or a new one. */
export function readTarget(
  name: string,
  size: number,
  offset: number,
  length: number,
  into?: Uint8Array,
): Uint8Array {
  checkRead(name, size, offset, length, into);
  return into === undefined ? new Uint8Array(length) : into.subarray(0, length);
}

/** A source over bytes already in memory; reads copy, so callers never alias the original. */
export function memorySource(name: string, bytes: Uint8Array): ByteSource {
  return {
    name,
    size: bytes.length,
    async read(offset, length, into) {
      const target = readTarget(name, bytes.length, offset, length, into);
      target.set(bytes.subarray(offset, offset + length));
      return target;
    },
  };
}

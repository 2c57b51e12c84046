// Reads and validates a .safetensors header lazily (8 bytes, then the header), applying every rule
// of the Rust reference in its order, so no byte that reaches a GPU kernel comes from a bad file.

import type { ByteSource } from '../io/source.ts';
import { dtypeBits, isDtype, type Dtype } from './dtype.ts';
import { asReadFailed, SafetensorsError } from '../io/errors.ts';
import { JsonSyntaxError, parseJson } from './json.ts';
import { scanRegularHeader, type TensorInfo } from './header-scan.ts';

export type { TensorInfo } from './header-scan.ts';

export interface SafetensorsHeader {
  file: string;
  fileSize: number;
  /** N, the JSON header's length in bytes. */
  headerLength: number;
  /** 8 + N: where the data buffer starts in the file. */
  dataStart: number;
  metadata: Record<string, string>;
  /** In file offset order. */
  tensors: TensorInfo[];
}

export const MAX_HEADER_SIZE = 100_000_000;

const LFS_MAGIC = 'version https://git-lfs';
/** Enough of the file's start to recognise a Git LFS pointer. */
const SNIFF_BYTES = 32;
const U64_MAX = (1n << 64n) - 1n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const TENSOR_FIELDS = new Set(['dtype', 'shape', 'data_offsets']);
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Reads the first 32 bytes (enough to spot a Git LFS pointer), then the rest of the header, and no more. */
export async function readSafetensorsHeader(source: ByteSource): Promise<SafetensorsHeader> {
  const file = source.name;
  const size = source.size;
  const first = await readOrFail(source, 0, Math.min(size, SNIFF_BYTES));
  const n = checkHeaderLength(file, size, first);
  const prefix = new Uint8Array(8 + n);
  prefix.set(first.subarray(0, prefix.length));
  if (prefix.length > first.length) {
    await readOrFail(source, first.length, prefix.length - first.length, prefix.subarray(first.length));
  }
  return parseSafetensorsHeader(file, size, prefix);
}

/**
 * The same checks over bytes already read: `prefix` holds at least the first 8 + N bytes of the file.
 * `fast` tries the regular-shape scanner first (same result, a property test holds them equal).
 */
export function parseSafetensorsHeader(
  file: string,
  fileSize: number,
  prefix: Uint8Array,
  fast = true,
): SafetensorsHeader {
  const n = checkHeaderLength(file, fileSize, prefix);
  if (prefix.length < 8 + n) {
    throw new SafetensorsError(
      'ReadFailed',
      file,
      `only ${prefix.length} of the ${8 + n} header bytes were given to the parser.`,
    );
  }
  const text = decodeHeader(file, prefix.subarray(8, 8 + n));
  const { metadata, tensors, end } = (fast ? regularHeader(text) : undefined) ?? strictHeader(file, text);
  const dataStart = 8 + n;
  const expected = BigInt(dataStart) + end;
  const actual = BigInt(fileSize);
  if (expected > actual) {
    throw new SafetensorsError(
      'MetadataIncompleteBuffer',
      file,
      `the header says the tensor data ends at byte ${expected} but the file has ${fileSize} bytes: it is truncated by ${expected - actual} bytes (an incomplete download?). Download or copy the file again.`,
    );
  }
  if (expected < actual) {
    throw new SafetensorsError(
      'MetadataIncompleteBuffer',
      file,
      `the file has ${actual - expected} trailing bytes after the last tensor that no tensor owns (a corrupt or polyglot file). Get the file again from its source.`,
    );
  }
  return { file, fileSize, headerLength: n, dataStart, metadata, tensors };
}

interface CheckedHeader {
  metadata: Record<string, string>;
  /** In offset order. */
  tensors: TensorInfo[];
  /** Where the last tensor's data ends in the data buffer. */
  end: bigint;
}

/** Rules 4-8 through the strict JSON parser and the schema and offset checks, every error as the reference words it. */
function strictHeader(file: string, text: string): CheckedHeader {
  const { metadata, entries } = checkSchema(file, parseHeaderJson(file, text));
  return { metadata, ...checkOffsets(file, entries) };
}

/** Rules 4-8 for a header the scanner accepts and whose offsets are plainly valid; undefined otherwise. */
function regularHeader(text: string): CheckedHeader | undefined {
  const scanned = scanRegularHeader(text);
  if (!scanned) return undefined;
  const tensors = regularOffsets(scanned.entries);
  return tensors && { metadata: scanned.metadata, tensors, end: BigInt(tensors.at(-1)?.end ?? 0) };
}

/**
 * checkOffsets for scanned entries (integers below 2^53, so exact as numbers): sorted the same way
 * (skipped when the text already is in offset order, as writers emit it) and checked without
 * BigInts. Undefined at anything checkOffsets would refuse or count past 2^53, so the strict path
 * words the error.
 */
function regularOffsets(entries: TensorInfo[]): TensorInfo[] | undefined {
  let ordered = true;
  for (let i = 1; i < entries.length && ordered; i++) {
    ordered = (entries[i - 1]?.begin ?? 0) < (entries[i]?.begin ?? 0);
  }
  if (!ordered) entries.sort((a, b) => a.begin - b.begin || a.end - b.end || (a.name < b.name ? -1 : 1));
  let start = 0;
  for (const { dtype, shape, begin, end } of entries) {
    if (begin !== start || end < begin) return undefined;
    let elements = 1;
    for (const dim of shape) {
      elements *= dim;
      if (elements > Number.MAX_SAFE_INTEGER) return undefined;
    }
    const bits = elements * dtypeBits(dtype);
    if (bits > Number.MAX_SAFE_INTEGER || bits % 8 !== 0 || end - begin !== bits / 8) return undefined;
    start = end;
  }
  return entries;
}

/**
 * Elements of a shape the reader has checked (each dimension a non-negative safe integer, the tensor's
 * bytes below 2^53, so the product is exact); 1 for a scalar's [].
 */
export function numel(shape: readonly number[]): number {
  return shape.reduce((product, dim) => product * dim, 1);
}

/** Bytes of a tensor of this dtype and shape; throws for invalid shapes, sub-byte remainders and sizes past 2^53. */
export function tensorByteLength(dtype: Dtype, shape: number[]): number {
  return specByteLength('', dtype, shape);
}

/** tensorByteLength, with the file and tensor named in any error. */
export function specByteLength(
  file: string,
  dtype: Dtype,
  shape: readonly number[],
  tensor?: string,
): number {
  const where = tensor === undefined ? {} : { tensor };
  if (!isDtype(dtype)) {
    throw new SafetensorsError('TensorInvalidInfo', file, `unknown dtype ${JSON.stringify(dtype)}.`, where);
  }
  let elements = 1n;
  for (const dim of shape) {
    if (!Number.isSafeInteger(dim) || dim < 0) {
      throw new SafetensorsError(
        'TensorInvalidInfo',
        file,
        `shape [${shape.join(', ')}] has a dimension that is not a non-negative integer.`,
        where,
      );
    }
    elements *= BigInt(dim);
  }
  const bits = elements * BigInt(dtypeBits(dtype));
  if (bits % 8n !== 0n) {
    throw new SafetensorsError(
      'MisalignedSlice',
      file,
      `${dtype} shape [${shape.join(', ')}] is ${bits} bits, not a whole number of bytes.`,
      where,
    );
  }
  if (bits / 8n > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new SafetensorsError(
      'ValidationOverflow',
      file,
      `${dtype} shape [${shape.join(', ')}] is too large.`,
      where,
    );
  }
  return Number(bits / 8n);
}

async function readOrFail(
  source: ByteSource,
  offset: number,
  length: number,
  into?: Uint8Array,
): Promise<Uint8Array> {
  try {
    return await source.read(offset, length, into);
  } catch (error) {
    throw asReadFailed(source.name, error, `the header (bytes ${offset}..${offset + length})`);
  }
}

/** Rules 1-3: the 8-byte length N is present, sane, and inside the file. Returns N. */
function checkHeaderLength(file: string, fileSize: number, bytes: Uint8Array): number {
  if (fileSize < 8) {
    throw new SafetensorsError(
      'HeaderTooSmall',
      file,
      `the file is ${fileSize} bytes, shorter than the 8-byte header length every safetensors file starts with. It is empty or truncated: download it again.`,
    );
  }
  if (bytes.length < 8) {
    throw new SafetensorsError(
      'ReadFailed',
      file,
      `only ${bytes.length} of the first 8 bytes were given to the parser.`,
    );
  }
  if (startsWithAscii(bytes, LFS_MAGIC)) {
    throw new SafetensorsError(
      'GitLfsPointer',
      file,
      'is a Git LFS pointer, not the weights: run `git lfs pull` or download the file itself.',
    );
  }
  const n = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (n === 0n || n > BigInt(MAX_HEADER_SIZE)) {
    const hint = startsWithAscii(bytes, 'version ')
      ? ' It starts with "version ": probably a Git LFS pointer, not the weights (run `git lfs pull`).'
      : ' This is not a safetensors file, or it is corrupt.';
    throw new SafetensorsError(
      'HeaderTooLarge',
      file,
      `the header length is ${n} bytes, outside 1..${MAX_HEADER_SIZE}.${hint}`,
    );
  }
  const length = Number(n);
  if (8 + length > fileSize) {
    throw new SafetensorsError(
      'InvalidHeaderLength',
      file,
      `the header length ${length} reaches byte ${8 + length}, past the end of the ${fileSize}-byte file. The file is truncated or not safetensors: download it again.`,
    );
  }
  return length;
}

function startsWithAscii(bytes: Uint8Array, text: string): boolean {
  if (bytes.length < text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[i] !== text.charCodeAt(i)) return false;
  return true;
}

/** Rule 4. */
function decodeHeader(file: string, bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch (error) {
    throw new SafetensorsError(
      'InvalidHeader',
      file,
      'the JSON header is not valid UTF-8: the file is corrupt or not safetensors.',
      { cause: error },
    );
  }
}

/** A number literal the header schema cannot accept, kept as written for the message. */
class RejectedNumber {
  constructor(readonly literal: string) {}
}

/** Integer literals of at most 20 digits (enough for u64) become exact BigInts; anything else is refused later. */
function headerNumber(literal: string): bigint | RejectedNumber {
  return /^(?:0|[1-9][0-9]{0,19})$/.test(literal) ? BigInt(literal) : new RejectedNumber(literal);
}

function parseHeaderJson(file: string, text: string): unknown {
  try {
    return parseJson(text, { maxDepth: 8, number: headerNumber });
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    throw new SafetensorsError(
      'InvalidHeaderDeserialization',
      file,
      `the header is not valid JSON: ${error.message}. The file is corrupt or was written by a non-conforming tool.`,
      { cause: error },
    );
  }
}

/**
 * Rules 4-5 on the decoded header: its metadata and schema-checked entries, in no particular order.
 * `fast` tries the regular-shape scanner first; it gives the same result as the general path (a
 * property test holds them equal) and hands anything unusual, errors included, to that path.
 */
export function headerEntries(
  file: string,
  text: string,
  fast = true,
): { metadata: Record<string, string>; entries: RawEntry[] } {
  const scanned = fast ? scanRegularHeader(text) : undefined;
  if (!scanned) return checkSchema(file, parseHeaderJson(file, text));
  const entries = scanned.entries.map(({ name, dtype, shape, begin, end }) => ({
    name,
    dtype,
    shape,
    begin: BigInt(begin),
    end: BigInt(end),
  }));
  return { metadata: scanned.metadata, entries };
}

export interface RawEntry {
  name: string;
  dtype: Dtype;
  shape: number[];
  begin: bigint;
  end: bigint;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof RejectedNumber)
  );
}

function describe(value: unknown): string {
  if (value instanceof RejectedNumber) return value.literal;
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (value === undefined) return 'missing';
  return typeof value === 'object' ? 'an object' : JSON.stringify(value);
}

/** Tensor names must be non-empty, free of control characters (NUL included) and of lone surrogates. */
export function checkTensorName(file: string, name: string): void {
  // Printable-ASCII names (nearly all of them) cannot hold either, so skip the Unicode regex.
  if (name === '' || (!PRINTABLE_ASCII.test(name) && /[\p{Cc}\p{Cs}]/u.test(name))) {
    throw new SafetensorsError(
      'InvalidName',
      file,
      'tensor name is empty or contains control characters (NUL included), which no checkpoint should have. The file is corrupt or crafted.',
      { tensor: name },
    );
  }
}

/** Rule 5: exactly the schema, nothing more. */
function checkSchema(file: string, json: unknown): { metadata: Record<string, string>; entries: RawEntry[] } {
  const invalid = (detail: string, tensor?: string): SafetensorsError =>
    new SafetensorsError(
      'InvalidHeaderDeserialization',
      file,
      `${detail} The file is corrupt or was written by a non-conforming tool.`,
      tensor === undefined ? {} : { tensor },
    );
  if (!isObject(json)) throw invalid(`the header is ${describe(json)}, not a JSON object.`);
  const metadata: Record<string, string> = {};
  const entries: RawEntry[] = [];
  // Keys then lookups: Object.entries would allocate a pair per tensor on a 300k-key header.
  for (const name of Object.keys(json)) {
    const value = json[name];
    if (name === '__metadata__') {
      if (value === null) continue;
      if (!isObject(value)) throw invalid(`__metadata__ is ${describe(value)}, not an object of strings.`);
      for (const [key, text] of Object.entries(value)) {
        if (typeof text !== 'string') {
          throw invalid(`__metadata__ value for ${JSON.stringify(key)} is ${describe(text)}, not a string.`);
        }
        Object.defineProperty(metadata, key, {
          value: text,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      continue;
    }
    checkTensorName(file, name);
    if (!isObject(value)) throw invalid(`the entry is ${describe(value)}, not an object.`, name);
    for (const field of Object.keys(value)) {
      if (!TENSOR_FIELDS.has(field)) {
        throw invalid(`unknown field ${JSON.stringify(field)} (allowed: dtype, shape, data_offsets).`, name);
      }
    }
    const { dtype, shape, data_offsets: offsets } = value;
    if (!isDtype(dtype)) throw invalid(`dtype ${describe(dtype)} is not a safetensors dtype.`, name);
    if (!Array.isArray(shape)) throw invalid(`shape is ${describe(shape)}, not an array.`, name);
    const dims: number[] = [];
    for (const dim of shape) {
      if (typeof dim !== 'bigint' || dim > MAX_SAFE) {
        throw invalid(`shape entry ${describe(dim)} is not an integer from 0 to 2^53-1.`, name);
      }
      dims.push(Number(dim));
    }
    if (!Array.isArray(offsets) || offsets.length !== 2) {
      throw invalid(`data_offsets is ${describe(offsets)}, not [begin, end].`, name);
    }
    const [begin, end] = offsets as unknown[];
    if (!isU64(begin))
      throw invalid(`data offset ${describe(begin)} is not an integer from 0 to 2^64-1.`, name);
    if (!isU64(end)) throw invalid(`data offset ${describe(end)} is not an integer from 0 to 2^64-1.`, name);
    entries.push({ name, dtype, shape: dims, begin, end });
  }
  return { metadata, entries };
}

/** Rules 6-8 per tensor, in offset order as the reference walks them; returns the buffer's end. */
function checkOffsets(file: string, entries: RawEntry[]): { tensors: TensorInfo[]; end: bigint } {
  entries.sort(
    (a, b) => compareBig(a.begin, b.begin) || compareBig(a.end, b.end) || (a.name < b.name ? -1 : 1),
  );
  const tensors: TensorInfo[] = [];
  let start = 0n;
  let previous: string | undefined;
  for (const entry of entries) {
    const { name, begin, end } = entry;
    if (begin !== start || end < begin) {
      throw new SafetensorsError('InvalidOffset', file, offsetProblem(entry, start, previous), {
        tensor: name,
      });
    }
    start = end;
    previous = name;
    let elements = 1n;
    for (const dim of entry.shape) {
      elements *= BigInt(dim);
      if (elements > U64_MAX) throw overflow(file, entry);
    }
    const bits = elements * BigInt(dtypeBits(entry.dtype));
    if (bits > U64_MAX) throw overflow(file, entry);
    if (bits % 8n !== 0n) {
      throw new SafetensorsError(
        'MisalignedSlice',
        file,
        `${entry.dtype} shape [${entry.shape.join(', ')}] is ${bits} bits, not a whole number of bytes. The file is corrupt.`,
        { tensor: name },
      );
    }
    if (end - begin !== bits / 8n) {
      throw new SafetensorsError(
        'TensorInvalidInfo',
        file,
        `${entry.dtype} shape [${entry.shape.join(', ')}] needs ${bits / 8n} bytes but data_offsets [${begin}, ${end}] hold ${end - begin}. The file is corrupt.`,
        { tensor: name },
      );
    }
    tensors.push({ name, dtype: entry.dtype, shape: entry.shape, begin: Number(begin), end: Number(end) });
  }
  return { tensors, end: start };
}

function isU64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value <= U64_MAX;
}

function compareBig(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function offsetProblem(entry: RawEntry, start: bigint, previous: string | undefined): string {
  const { begin, end } = entry;
  const suffix = ' The file is corrupt or crafted: get it again from its source.';
  if (end < begin) return `data_offsets [${begin}, ${end}] end before they begin.${suffix}`;
  if (previous === undefined) {
    return `the first tensor's data starts at byte ${begin} of the data buffer, not 0: the bytes before it belong to no tensor.${suffix}`;
  }
  if (begin > start) {
    return `data starts at byte ${begin} but the previous tensor (${previous}) ends at ${start}: a gap of ${begin - start} bytes that no tensor owns.${suffix}`;
  }
  return `data [${begin}, ${end}) overlaps the previous tensor (${previous}, ending at byte ${start}): two tensors would share bytes.${suffix}`;
}

function overflow(file: string, entry: RawEntry): SafetensorsError {
  return new SafetensorsError(
    'ValidationOverflow',
    file,
    `${entry.dtype} shape [${entry.shape.join(', ')}] overflows 64 bits when counted in bits. The file is corrupt or crafted.`,
    { tensor: entry.name },
  );
}

// The fast path of the safetensors header reader: the regular shape writers emit, scanned without
// building a JSON tree. It only ever accepts what the general path (safetensors.ts) accepts and gives
// the same entries (a property test holds the two equal); anything else goes to that path, which
// words every error.

import { isDtype, type Dtype } from './dtype.ts';

/** One tensor's entry in a header, checked. */
export interface TensorInfo {
  name: string;
  dtype: Dtype;
  shape: number[];
  /** Byte range [begin, end) relative to the start of the data buffer (absolute: dataStart + begin). */
  begin: number;
  end: number;
}

/** Fewer characters than any tensor entry takes: `"a":{"dtype":"U8","shape":[],"data_offsets":[0,0]}`. */
const MIN_ENTRY_CHARS = 50;

/**
 * The shape writers emit, `{"__metadata__":{"format":"pt"},"name":{"dtype":"F32","shape":[2,3],
 * "data_offsets":[0,24]},...}` with no whitespace until the padding, scanned without building a
 * JSON tree: on a 300k-tensor header the tree's objects, BigInts and the 300k-key dictionary
 * dominate the time. Returns undefined at the first thing it does not accept as plainly valid
 * (escapes, non-printable-ASCII names or metadata, metadata that is not an object of strings,
 * leading zeros, numbers over 15 digits, duplicates, unknown dtypes, other field orders), so every
 * check and every error message stays the general path's.
 */
export function scanRegularHeader(
  text: string,
): { metadata: Record<string, string>; entries: TensorInfo[] } | undefined {
  const entries: TensorInfo[] = [];
  let metadata: Record<string, string> | undefined;
  const length = text.length;
  let dtype: Dtype = 'F32';
  const dims: number[] = [];
  // A hash per name instead of a Set of 300k strings: only names whose hashes collide are compared.
  const hashes = new Uint32Array(Math.ceil(length / MIN_ENTRY_CHARS) + 1);
  let pos = 1;
  if (text.charCodeAt(0) !== OPEN_BRACE || text.charCodeAt(1) !== QUOTE) return undefined;
  // Reads a non-negative integer of at most 15 digits (so exact as a number) or returns -1.
  const integer = (): number => {
    const start = pos;
    let value = 0;
    for (let c = text.charCodeAt(pos); c >= ZERO && c <= NINE; c = text.charCodeAt(++pos)) {
      value = value * 10 + (c - ZERO);
    }
    const digits = pos - start;
    if (digits === 0 || digits > 15 || (digits > 1 && text.charCodeAt(start) === ZERO)) return -1;
    return value;
  };
  // From an opening quote to past the closing one: printable ASCII without escapes; -1 otherwise.
  const plainString = (): number => {
    let hash = FNV_OFFSET;
    for (let c = text.charCodeAt(++pos); c !== QUOTE; c = text.charCodeAt(++pos)) {
      // Written negated so the NaN past the end of the text also stops the scan.
      if (!(c >= 0x20 && c <= 0x7e) || c === BACKSLASH) return -1;
      hash = Math.imul(hash ^ c, FNV_PRIME);
    }
    pos += 1;
    return hash >>> 0;
  };
  for (;;) {
    // At the opening quote of a key.
    const nameStart = pos + 1;
    const hash = plainString();
    if (hash < 0) return undefined;
    const name = text.slice(nameStart, pos - 1);
    if (name === '__metadata__') {
      if (metadata !== undefined || text.charCodeAt(pos) !== COLON) return undefined;
      pos += 1;
      metadata = scanMetadata();
      if (metadata === undefined) return undefined;
    } else {
      if (name === '' || entries.length === hashes.length) return undefined;
      hashes[entries.length] = hash;
      if (!text.startsWith(DTYPE_FIELD, pos - 1)) return undefined;
      pos += DTYPE_FIELD.length - 1;
      const dtypeEnd = text.indexOf('"', pos);
      // Neighbours nearly always share a dtype: the last one's string is taken again, not a new slice.
      const same = dtypeEnd - pos === dtype.length && text.startsWith(dtype, pos);
      if (!same) {
        const found = text.slice(pos, dtypeEnd);
        if (dtypeEnd < 0 || !isDtype(found)) return undefined;
        dtype = found;
      }
      if (!text.startsWith(SHAPE_FIELD, dtypeEnd)) return undefined;
      pos = dtypeEnd + SHAPE_FIELD.length;
      // Dimensions go through one scratch array, so each shape is allocated at its length.
      let rank = 0;
      if (text.charCodeAt(pos) === CLOSE_BRACKET) pos += 1;
      else {
        for (;;) {
          const dim = integer();
          if (dim < 0) return undefined;
          dims[rank++] = dim;
          const c = text.charCodeAt(pos++);
          if (c === CLOSE_BRACKET) break;
          if (c !== COMMA) return undefined;
        }
      }
      const shape = dims.slice(0, rank);
      if (!text.startsWith(OFFSETS_FIELD, pos)) return undefined;
      pos += OFFSETS_FIELD.length;
      const begin = integer();
      if (begin < 0 || text.charCodeAt(pos++) !== COMMA) return undefined;
      const end = integer();
      if (end < 0 || text.charCodeAt(pos++) !== CLOSE_BRACKET || text.charCodeAt(pos++) !== CLOSE_BRACE) {
        return undefined;
      }
      entries.push({ name, dtype, shape, begin, end });
    }
    const next = text.charCodeAt(pos++);
    if (next === COMMA && text.charCodeAt(pos) === QUOTE) continue;
    if (next !== CLOSE_BRACE) return undefined;
    // Only JSON whitespace may follow: the padding is spaces.
    for (; pos < length; pos++) {
      const c = text.charCodeAt(pos);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return undefined;
    }
    return hasDuplicate(entries, hashes) ? undefined : { metadata: metadata ?? {}, entries };
  }

  // `{"key":"value",...}` of plain strings, keys distinct; pos ends past its closing brace.
  function scanMetadata(): Record<string, string> | undefined {
    const found: Record<string, string> = {};
    if (text.charCodeAt(pos++) !== OPEN_BRACE) return undefined;
    if (text.charCodeAt(pos) === CLOSE_BRACE) {
      pos += 1;
      return found;
    }
    for (;;) {
      const keyStart = pos + 1;
      if (text.charCodeAt(pos) !== QUOTE || plainString() < 0) return undefined;
      const key = text.slice(keyStart, pos - 1);
      if (Object.hasOwn(found, key) || text.charCodeAt(pos++) !== COLON) return undefined;
      const valueStart = pos + 1;
      if (text.charCodeAt(pos) !== QUOTE || plainString() < 0) return undefined;
      // As the strict path stores it: a "__proto__" key must not become the prototype.
      Object.defineProperty(found, key, {
        value: text.slice(valueStart, pos - 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      const c = text.charCodeAt(pos++);
      if (c === CLOSE_BRACE) return found;
      if (c !== COMMA) return undefined;
    }
  }
}

/** Whether two entries share a name, comparing names only where their hashes collide. */
function hasDuplicate(entries: TensorInfo[], hashes: Uint32Array): boolean {
  const sorted = hashes.slice(0, entries.length).sort();
  const colliding = new Set<number>();
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) colliding.add(sorted[i] ?? 0);
  if (colliding.size === 0) return false;
  const names = new Set<string>();
  for (let i = 0; i < entries.length; i++) {
    if (!colliding.has(hashes[i] ?? 0)) continue;
    const name = entries[i]?.name ?? '';
    if (names.has(name)) return true;
    names.add(name);
  }
  return false;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const ZERO = 0x30;
const NINE = 0x39;
const DTYPE_FIELD = '":{"dtype":"';
const SHAPE_FIELD = '","shape":[';
const OFFSETS_FIELD = ',"data_offsets":[';

// Writes .safetensors files as the Rust reference does (tensors by dtype alignment then name, the
// header space-padded to a multiple of 8), either at once for small files or streamed to a sink.

import type { ByteSink } from '../io/sink.ts';
import { dtypeAlignment, type Dtype } from './dtype.ts';
import { must } from '../io/checked.ts';
import { SafetensorsError } from '../io/errors.ts';
import { checkTensorName, MAX_HEADER_SIZE, specByteLength } from './safetensors.ts';

export interface TensorSpec {
  name: string;
  dtype: Dtype;
  shape: number[];
}

export interface SafetensorsLayout {
  /** The 8-byte little-endian length, then the JSON padded with spaces to a multiple of 8. */
  header: Uint8Array;
  /** In write order; begin/end are relative to the data buffer, as in the header. */
  tensors: (TensorSpec & { begin: number; end: number })[];
  fileSize: number;
}

/** UTF-8 byte order (= code point order), as Rust sorts names; plain `<` differs above U+D7FF. */
export function compareNames(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xSurrogate = x >= 0xd800 && x <= 0xdfff;
    const ySurrogate = y >= 0xd800 && y <= 0xdfff;
    // An astral code point (a surrogate pair) sorts above U+E000..U+FFFF in code point order.
    if (xSurrogate !== ySurrogate) return xSurrogate ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

/** Write order: larger alignment first (so every tensor stays aligned), then name. */
export function compareSpecs(a: TensorSpec, b: TensorSpec): number {
  return dtypeAlignment(b.dtype) - dtypeAlignment(a.dtype) || compareNames(a.name, b.name);
}

/** Validates names, dtypes and shapes of tensors to be written; returns each one's byte length. */
export function checkSpecs(file: string, tensors: readonly TensorSpec[]): Map<string, number> {
  const bytes = new Map<string, number>();
  for (const spec of tensors) {
    checkTensorName(file, spec.name);
    if (spec.name === '__metadata__') {
      throw new SafetensorsError(
        'InvalidName',
        file,
        'a tensor cannot be named __metadata__: that key holds the file metadata. Rename the tensor.',
        { tensor: spec.name },
      );
    }
    if (bytes.has(spec.name)) {
      throw new SafetensorsError(
        'DuplicateTensor',
        file,
        'two tensors have this name. Give each a unique name.',
        {
          tensor: spec.name,
        },
      );
    }
    bytes.set(spec.name, specByteLength(file, spec.dtype, spec.shape, spec.name));
  }
  return bytes;
}

const utf8 = new TextEncoder();

/**
 * Plans a file: tensor order and offsets, and the header bytes. `file` only names the output in
 * errors. Rejects bad names, duplicates, bad metadata and headers over 100 MB.
 */
export function layoutSafetensors(
  tensors: TensorSpec[],
  metadata: Record<string, string> = {},
  file = 'output',
): SafetensorsLayout {
  const bytes = checkSpecs(file, tensors);
  const ordered = [...tensors].sort(compareSpecs);
  const placed: SafetensorsLayout['tensors'] = [];
  const parts: string[] = [];
  const metadataJson = metadataToJson(file, metadata);
  if (metadataJson !== undefined) parts.push(`"__metadata__":${metadataJson}`);
  let offset = 0;
  for (const spec of ordered) {
    const end = offset + must(bytes.get(spec.name), `byte size of ${spec.name}`);
    placed.push({ name: spec.name, dtype: spec.dtype, shape: [...spec.shape], begin: offset, end });
    parts.push(
      `${JSON.stringify(spec.name)}:{"dtype":"${spec.dtype}","shape":[${spec.shape.join(',')}],"data_offsets":[${offset},${end}]}`,
    );
    offset = end;
  }
  const json = utf8.encode(`{${parts.join(',')}}`);
  const n = Math.ceil(json.length / 8) * 8;
  if (n > MAX_HEADER_SIZE) {
    throw new SafetensorsError(
      'HeaderTooLargeToWrite',
      file,
      `the header would be ${n} bytes, over the ${MAX_HEADER_SIZE}-byte limit readers enforce. Split the tensors over more shards or shorten the metadata.`,
    );
  }
  const header = new Uint8Array(8 + n);
  new DataView(header.buffer).setBigUint64(0, BigInt(n), true);
  header.set(json, 8);
  header.fill(0x20, 8 + json.length);
  return { header, tensors: placed, fileSize: 8 + n + offset };
}

function metadataToJson(file: string, metadata: Record<string, string>): string | undefined {
  const keys = Object.keys(metadata).sort(compareNames);
  if (keys.length === 0) return undefined;
  const entries = keys.map((key) => {
    const value: unknown = metadata[key];
    if (typeof value !== 'string' || /\p{Cs}/u.test(key) || /\p{Cs}/u.test(value)) {
      throw new SafetensorsError(
        'InvalidHeaderDeserialization',
        file,
        `metadata entry ${JSON.stringify(key)} must map a well-formed string to a well-formed string; readers would reject the file.`,
      );
    }
    return `${JSON.stringify(key)}:${JSON.stringify(value)}`;
  });
  return `{${entries.join(',')}}`;
}

/** A whole file in memory, for tests and small demo checkpoints. */
export function serializeSafetensors(
  tensors: (TensorSpec & { data: Uint8Array })[],
  metadata?: Record<string, string>,
): Uint8Array {
  const layout = layoutSafetensors(tensors, metadata);
  const data = new Map(tensors.map((t) => [t.name, t.data]));
  const out = new Uint8Array(layout.fileSize);
  out.set(layout.header);
  for (const t of layout.tensors) {
    const bytes = must(data.get(t.name), `data of ${t.name}`);
    if (bytes.length !== t.end - t.begin) {
      throw new SafetensorsError(
        'WriteMismatch',
        'output',
        `${t.dtype} shape [${t.shape.join(', ')}] needs ${t.end - t.begin} bytes but ${bytes.length} were given.`,
        { tensor: t.name },
      );
    }
    out.set(bytes, layout.header.length + t.begin);
  }
  return out;
}

/**
 * Streams one file to a sink from a layout: the header goes out with the first call, then tensor
 * bytes in layout order in chunks of any size. A failed close() aborts the sink, so an incomplete
 * file never becomes visible; abort() after a failed close() is a no-op. Await each call before the
 * next: chunks go to the sink in call order only if calls do not overlap.
 */
export class SafetensorsStreamWriter {
  private index = 0;
  private written = 0;
  private headerSent = false;
  private finished = false;

  constructor(
    private readonly sink: ByteSink,
    private readonly layout: SafetensorsLayout,
    private readonly file: string,
  ) {}

  async writeTensorBytes(name: string, chunk: Uint8Array): Promise<void> {
    if (this.finished) throw this.mismatch('write after close() or abort().', name);
    const tensors = this.layout.tensors;
    // Complete tensors (empty ones included) may be passed over; an incomplete one may not.
    let index = this.index;
    let written = this.written;
    for (let current = tensors[index]; current && current.name !== name; current = tensors[index]) {
      if (written !== current.end - current.begin) {
        const known = tensors.some((t) => t.name === name);
        throw this.mismatch(
          known
            ? `bytes arrived while ${current.name} still lacks ${current.end - current.begin - written} bytes: tensors must arrive in layout order.`
            : 'this tensor is not in the layout.',
          name,
        );
      }
      index += 1;
      written = 0;
    }
    const target = tensors[index];
    if (!target)
      throw this.mismatch('bytes arrived after this tensor was complete, or out of layout order.', name);
    const size = target.end - target.begin;
    if (written + chunk.length > size) {
      throw this.mismatch(`${written + chunk.length} bytes arrived for a tensor of ${size} bytes.`, name);
    }
    this.index = index;
    this.written = written + chunk.length;
    await this.sendHeader();
    if (chunk.length > 0) await this.sink.write(chunk);
  }

  async close(): Promise<void> {
    if (this.finished) throw this.mismatch('close() after close() or abort().');
    const tensors = this.layout.tensors;
    let index = this.index;
    let written = this.written;
    for (let current = tensors[index]; current; current = tensors[index]) {
      if (written !== current.end - current.begin) {
        await this.abort();
        throw this.mismatch(
          `closed with ${current.end - current.begin - written} bytes still missing; the file was discarded.`,
          current.name,
        );
      }
      index += 1;
      written = 0;
    }
    await this.sendHeader();
    this.finished = true;
    try {
      await this.sink.close();
    } catch (error) {
      // A sink that failed to commit (disk full, a browser's safety check) must not leave a partial file.
      await this.sink.abort().catch(() => undefined);
      throw error;
    }
  }

  async abort(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    await this.sink.abort();
  }

  private async sendHeader(): Promise<void> {
    if (this.headerSent) return;
    this.headerSent = true;
    await this.sink.write(this.layout.header);
  }

  private mismatch(detail: string, tensor?: string): SafetensorsError {
    return new SafetensorsError('WriteMismatch', this.file, detail, tensor === undefined ? {} : { tensor });
  }
}

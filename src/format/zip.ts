// A strict stored (uncompressed) ZIP writer with ZIP64 where sizes or offsets pass 4 GiB (PKWARE
// APPNOTE 6.3.10, sections 4.3 and 4.5.3): the bytes around each file's data, built from its name and
// size up front and its CRC-32 after it, so the data itself is never copied or held here.
//
// Why not client-zip (it installs and streams ZIP64 well): it computes each CRC while streaming and
// only hands out the zip as a stream. A browser without a save picker can only download a stream by
// collecting it into a Blob, i.e. the whole zip in memory or blob storage. Writing the headers here
// lets that fallback build the zip as a Blob of these small headers and the OPFS Files themselves
// (disk-backed), and keeps both ways of exporting byte for byte the same zip.

/** Bytes of the largest ZIP "32-bit" value; at or past it the field moves to the ZIP64 extra. */
const MAX32 = 0xffffffff;
const MAX16 = 0xffff;
/** Version 4.5: ZIP64 (needed to extract); 2.0 is plain stored files with a data descriptor. */
const V_ZIP64 = 45;
const V_PLAIN = 20;
/** Bit 3: CRC and sizes follow the data (data descriptor); bit 11: the name is UTF-8. */
const FLAGS = 0x0008 | 0x0800;

/** Slicing-by-8 tables for the reflected CRC-32 (polynomial 0xEDB88320) that zip, PNG and gzip use. */
const TABLE = ((): Uint32Array => {
  const t = new Uint32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 256; n < 8 * 256; n++) {
    const prev = t[n - 256] as number;
    t[n] = ((t[prev & 0xff] as number) ^ (prev >>> 8)) >>> 0;
  }
  return t;
})();

/** CRC-32 of `bytes` continued from `crc` (0 to start), so a file's CRC is computed chunk by chunk. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  const t = TABLE;
  let c = ~crc >>> 0;
  let i = 0;
  const end8 = bytes.length - (bytes.length % 8);
  for (; i < end8; i += 8) {
    const a =
      (c ^
        ((bytes[i] as number) |
          ((bytes[i + 1] as number) << 8) |
          ((bytes[i + 2] as number) << 16) |
          ((bytes[i + 3] as number) << 24))) >>>
      0;
    c =
      (t[1792 + (a & 0xff)] as number) ^
      (t[1536 + ((a >>> 8) & 0xff)] as number) ^
      (t[1280 + ((a >>> 16) & 0xff)] as number) ^
      (t[1024 + (a >>> 24)] as number) ^
      (t[768 + (bytes[i + 4] as number)] as number) ^
      (t[512 + (bytes[i + 5] as number)] as number) ^
      (t[256 + (bytes[i + 6] as number)] as number) ^
      (t[bytes[i + 7] as number] as number);
  }
  for (; i < bytes.length; i++) c = (t[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return ~c >>> 0;
}

/** A refused entry or misuse of the writer: the zip would be wrong, so nothing is written. */
export class ZipError extends Error {
  override name = 'ZipError';
}

/** One file of the zip: its path inside the zip, its size and its modification time (ms). */
export interface ZipEntryMeta {
  name: string;
  size: number;
  modified: number;
}

interface Written extends ZipEntryMeta {
  nameBytes: Uint8Array;
  offset: number;
  crc: number;
  zip64: boolean;
}

/** MS-DOS time and date (local time, 2-second steps, 1980–2107) of a JS time. */
export function dosDateTime(ms: number): { time: number; date: number } {
  const d = new Date(ms);
  const year = d.getFullYear();
  if (!Number.isFinite(ms) || year < 1980) return { time: 0, date: (1 << 5) | 1 };
  const clamped = Math.min(year, 2107);
  return {
    time: (d.getHours() << 11) | (d.getMinutes() << 5) | (d.getSeconds() >> 1),
    date: ((clamped - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate(),
  };
}

/** Paths a zip may hold here: relative, '/'-separated, no '.', '..' or empty parts, no backslash. */
export function checkEntryName(name: string): void {
  const parts = name.split('/');
  if (
    name.length === 0 ||
    name.includes('\\') ||
    name.includes('\0') ||
    parts.some((p) => p === '' || p === '.' || p === '..')
  )
    throw new ZipError(`The zip entry name ${JSON.stringify(name)} is not a plain relative path.`);
}

class Bytes {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  private at = 0;
  constructor(length: number) {
    this.bytes = new Uint8Array(length);
    this.view = new DataView(this.bytes.buffer);
  }
  u16(v: number): this {
    this.view.setUint16(this.at, v, true);
    this.at += 2;
    return this;
  }
  u32(v: number): this {
    this.view.setUint32(this.at, v, true);
    this.at += 4;
    return this;
  }
  u64(v: number): this {
    this.view.setBigUint64(this.at, BigInt(v), true);
    this.at += 8;
    return this;
  }
  raw(b: Uint8Array): this {
    this.bytes.set(b, this.at);
    this.at += b.length;
    return this;
  }
  done(): Uint8Array {
    if (this.at !== this.bytes.length)
      throw new ZipError(`zip record sized ${this.bytes.length}, wrote ${this.at}`);
    return this.bytes;
  }
}

/**
 * The zip's bytes around the data, in order: `begin(entry)` gives the local header, the caller then
 * emits exactly `entry.size` data bytes, `end(crc)` gives the data descriptor, and `finish()` the
 * central directory with the end records. Offsets are plain numbers (exact below 2^53 bytes).
 */
export class ZipWriter {
  private readonly entries: Written[] = [];
  private readonly names = new Set<string>();
  private open: Written | null = null;
  private finished = false;
  /** Bytes of the zip so far (headers, data and descriptors handed out). */
  offset = 0;

  constructor(start = 0) {
    this.offset = start;
  }

  begin(entry: ZipEntryMeta): Uint8Array {
    if (this.open || this.finished) throw new ZipError('ZipWriter.begin: the previous entry is not ended.');
    checkEntryName(entry.name);
    if (!Number.isSafeInteger(entry.size) || entry.size < 0)
      throw new ZipError(`The zip entry ${entry.name} has an invalid size ${entry.size}.`);
    if (this.names.has(entry.name)) throw new ZipError(`The zip holds ${entry.name} twice.`);
    this.names.add(entry.name);
    const nameBytes = new TextEncoder().encode(entry.name);
    if (nameBytes.length > MAX16) throw new ZipError(`The zip entry name ${entry.name} is too long.`);
    // Sizes are known up front, so only a file of 4 GiB or more takes ZIP64 sizes here.
    const zip64 = entry.size >= MAX32;
    const written: Written = { ...entry, nameBytes, offset: this.offset, crc: 0, zip64 };
    const { time, date } = dosDateTime(entry.modified);
    const extra = zip64 ? 20 : 0;
    const header = new Bytes(30 + nameBytes.length + extra)
      .u32(0x04034b50)
      .u16(zip64 ? V_ZIP64 : V_PLAIN)
      .u16(FLAGS)
      .u16(0)
      .u16(time)
      .u16(date)
      // With bit 3 the CRC and sizes are zero here and follow the data (APPNOTE 4.4.4).
      .u32(0)
      .u32(zip64 ? MAX32 : 0)
      .u32(zip64 ? MAX32 : 0)
      .u16(nameBytes.length)
      .u16(extra)
      .raw(nameBytes);
    // The ZIP64 extra in the local header says the descriptor's sizes are 8 bytes (APPNOTE 4.3.9.2).
    if (zip64) header.u16(0x0001).u16(16).u64(0).u64(0);
    this.open = written;
    const bytes = header.done();
    this.offset += bytes.length;
    return bytes;
  }

  /** Ends the open entry, whose `size` data bytes the caller has emitted, with their CRC-32. */
  end(crc: number): Uint8Array {
    const entry = this.open;
    if (!entry) throw new ZipError('ZipWriter.end: no entry is open.');
    this.open = null;
    entry.crc = crc >>> 0;
    this.offset += entry.size;
    this.entries.push(entry);
    const descriptor = entry.zip64
      ? new Bytes(24).u32(0x08074b50).u32(entry.crc).u64(entry.size).u64(entry.size)
      : new Bytes(16).u32(0x08074b50).u32(entry.crc).u32(entry.size).u32(entry.size);
    const bytes = descriptor.done();
    this.offset += bytes.length;
    return bytes;
  }

  /** The central directory and end records; the zip is complete after these bytes. */
  finish(): Uint8Array {
    if (this.open || this.finished)
      throw new ZipError('ZipWriter.finish: an entry is open or the zip is finished.');
    this.finished = true;
    const records: Uint8Array[] = [];
    const start = this.offset;
    for (const e of this.entries) {
      const bigSize = e.size >= MAX32;
      const bigOffset = e.offset >= MAX32;
      const extra = (bigSize ? 16 : 0) + (bigOffset ? 8 : 0);
      const { time, date } = dosDateTime(e.modified);
      const record = new Bytes(46 + e.nameBytes.length + (extra > 0 ? 4 + extra : 0))
        .u32(0x02014b50)
        .u16(V_ZIP64)
        .u16(bigSize || bigOffset ? V_ZIP64 : V_PLAIN)
        .u16(FLAGS)
        .u16(0)
        .u16(time)
        .u16(date)
        .u32(e.crc)
        .u32(bigSize ? MAX32 : e.size)
        .u32(bigSize ? MAX32 : e.size)
        .u16(e.nameBytes.length)
        .u16(extra > 0 ? 4 + extra : 0)
        .u16(0)
        .u16(0)
        .u16(0)
        .u32(0)
        .u32(bigOffset ? MAX32 : e.offset)
        .raw(e.nameBytes);
      // Only the fields set to 0xFFFFFFFF above, in the order uncompressed, compressed, offset.
      if (extra > 0) {
        record.u16(0x0001).u16(extra);
        if (bigSize) record.u64(e.size).u64(e.size);
        if (bigOffset) record.u64(e.offset);
      }
      records.push(record.done());
    }
    const size = records.reduce((sum, r) => sum + r.length, 0);
    const count = this.entries.length;
    const zip64 = count >= MAX16 || size >= MAX32 || start >= MAX32;
    if (zip64) {
      const end64At = start + size;
      records.push(
        new Bytes(56)
          .u32(0x06064b50)
          .u64(44)
          .u16(V_ZIP64)
          .u16(V_ZIP64)
          .u32(0)
          .u32(0)
          .u64(count)
          .u64(count)
          .u64(size)
          .u64(start)
          .done(),
        new Bytes(20).u32(0x07064b50).u32(0).u64(end64At).u32(1).done(),
      );
    }
    records.push(
      new Bytes(22)
        .u32(0x06054b50)
        .u16(0)
        .u16(0)
        .u16(zip64 ? MAX16 : count)
        .u16(zip64 ? MAX16 : count)
        .u32(zip64 ? MAX32 : size)
        .u32(zip64 ? MAX32 : start)
        .u16(0)
        .done(),
    );
    const out = new Uint8Array(records.reduce((sum, r) => sum + r.length, 0));
    let at = 0;
    for (const r of records) {
      out.set(r, at);
      at += r.length;
    }
    this.offset += out.length;
    return out;
  }
}

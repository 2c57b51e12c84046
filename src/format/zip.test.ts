// The stored ZIP64 writer: CRC-32 against zlib's, zips read back by Python's zipfile and Info-ZIP's
// unzip (test-only readers), and the ZIP64 records of a >4 GiB zip checked on a sparse file, so no
// gigabytes are allocated or written.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, rmSync, writeSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { crc32, dosDateTime, ZipError, ZipWriter } from './zip.ts';

const dir = mkdtempSync(join(tmpdir(), 'zip-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function random(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let s = seed >>> 0;
  for (let i = 0; i < length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

/** A whole zip of in-memory files, written the way the export streams one. */
function zipOf(
  files: { name: string; bytes: Uint8Array }[],
  modified = Date.UTC(2026, 11, 7, 12),
): Uint8Array {
  const zip = new ZipWriter();
  const parts: Uint8Array[] = [];
  for (const f of files) {
    parts.push(zip.begin({ name: f.name, size: f.bytes.length, modified }));
    parts.push(f.bytes);
    parts.push(zip.end(crc32(f.bytes)));
  }
  parts.push(zip.finish());
  expect(zip.offset).toBe(parts.reduce((s, p) => s + p.length, 0));
  return Buffer.concat(parts);
}

/** Python's zipfile: every entry's name, size, offset and (where asked) sha256 of its bytes. */
function pythonList(
  path: string,
  read: boolean,
): { name: string; size: number; offset: number; sha?: string }[] {
  const script = `
import hashlib, json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    out = []
    for i in z.infolist():
        row = {"name": i.filename, "size": i.file_size, "offset": i.header_offset}
        if sys.argv[2] == "1":
            row["sha"] = hashlib.sha256(z.read(i)).hexdigest()
        out.append(row)
    print(json.dumps(out))
`;
  return JSON.parse(
    execFileSync('python3', ['-c', script, path, read ? '1' : '0'], { encoding: 'utf8' }),
  ) as {
    name: string;
    size: number;
    offset: number;
    sha?: string;
  }[];
}

const sha = (bytes: Uint8Array): string =>
  execFileSync(
    'python3',
    ['-c', 'import hashlib,sys;print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'],
    {
      input: bytes,
      encoding: 'utf8',
    },
  ).trim();

describe('crc32', () => {
  it('gives the check value and zlib’s CRC on random inputs, whole or in chunks', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
    for (const length of [1, 7, 8, 9, 63, 1000, 65_537]) {
      const bytes = random(length, length);
      const whole = crc32(bytes);
      expect(whole).toBe(zlibCrc32(bytes));
      let c = 0;
      for (let at = 0; at < length; at += 13) c = crc32(bytes.subarray(at, at + 13), c);
      expect(c).toBe(whole);
    }
  });
});

describe('ZipWriter', () => {
  it('writes a stored zip that Python and unzip read back byte for byte', () => {
    const files = [
      { name: 'ram-3-agents/model-00001-of-00002.safetensors', bytes: random(70_001, 1) },
      { name: 'ram-3-agents/README.md', bytes: new TextEncoder().encode('# naïve café\n') },
      { name: 'ram-3-agents/empty.json', bytes: new Uint8Array(0) },
    ];
    const path = join(dir, 'small.zip');
    const zip = zipOf(files);
    const fd = openSync(path, 'w');
    writeSync(fd, zip);
    closeSync(fd);
    const listed = pythonList(path, true);
    expect(listed.map((e) => [e.name, e.size, e.sha])).toEqual(
      files.map((f) => [f.name, f.bytes.length, sha(f.bytes)]),
    );
    // unzip -t checks every CRC and the structure; it exits non-zero on any error.
    expect(execFileSync('unzip', ['-t', path], { encoding: 'utf8' })).toContain('No errors detected');
  });

  it('moves sizes and offsets past 4 GiB into ZIP64 records that Python reads (sparse file)', () => {
    const big = 5 * 1024 ** 3 + 3;
    const small = random(4096, 9);
    const zip = new ZipWriter();
    const path = join(dir, 'big.zip');
    const fd = openSync(path, 'w');
    try {
      const header = zip.begin({ name: 'm/big.safetensors', size: big, modified: Date.UTC(2026, 0, 1) });
      // A ZIP64 local header: sizes 0xFFFFFFFF and a 20-byte extra, so the descriptor's sizes are 8 bytes.
      const view = new DataView(header.buffer);
      expect(view.getUint16(4, true)).toBe(45);
      expect(view.getUint32(22, true)).toBe(0xffffffff);
      expect(view.getUint16(28, true)).toBe(20);
      writeSync(fd, header, 0, header.length, 0);
      // The data: a hole in the file, never written.
      const descriptor = zip.end(0x12345678);
      expect(descriptor.length).toBe(24);
      const dv = new DataView(descriptor.buffer);
      expect(dv.getUint32(0, true)).toBe(0x08074b50);
      expect(dv.getBigUint64(8, true)).toBe(BigInt(big));
      writeSync(fd, descriptor, 0, descriptor.length, header.length + big);
      const smallAt = zip.offset;
      expect(smallAt).toBeGreaterThan(2 ** 32);
      const h2 = zip.begin({ name: 'm/README.md', size: small.length, modified: Date.UTC(2026, 0, 1) });
      // A small file needs no ZIP64 of its own, wherever it starts.
      expect(h2.length).toBe(30 + 'm/README.md'.length);
      writeSync(fd, h2, 0, h2.length, smallAt);
      writeSync(fd, small, 0, small.length, smallAt + h2.length);
      const d2 = zip.end(crc32(small));
      expect(d2.length).toBe(16);
      writeSync(fd, d2, 0, d2.length, smallAt + h2.length + small.length);
      const cdAt = zip.offset;
      const end = zip.finish();
      writeSync(fd, end, 0, end.length, cdAt);
      ftruncateSync(fd, zip.offset);
      // The end records: ZIP64 end record and locator, then the classic record with 0xFFFF… fields.
      const tail = new DataView(end.buffer, end.byteOffset + end.length - 22 - 20 - 56);
      expect(tail.getUint32(0, true)).toBe(0x06064b50);
      expect(tail.getBigUint64(24, true)).toBe(2n);
      expect(tail.getBigUint64(48, true)).toBe(BigInt(cdAt));
      expect(tail.getUint32(56, true)).toBe(0x07064b50);
      expect(tail.getBigUint64(56 + 8, true)).toBe(BigInt(cdAt + end.length - 22 - 20 - 56));
      expect(tail.getUint32(76, true)).toBe(0x06054b50);
      expect(tail.getUint32(76 + 16, true)).toBe(0xffffffff);
    } finally {
      closeSync(fd);
    }
    // Python finds both entries from the ZIP64 records and reads the small one (past 4 GiB) whole.
    const listed = pythonList(path, false);
    expect(listed).toEqual([
      { name: 'm/big.safetensors', size: big, offset: 0 },
      { name: 'm/README.md', size: small.length, offset: 30 + 'm/big.safetensors'.length + 20 + big + 24 },
    ]);
    const read = execFileSync(
      'python3',
      [
        '-c',
        'import sys,zipfile,hashlib;print(hashlib.sha256(zipfile.ZipFile(sys.argv[1]).read("m/README.md")).hexdigest())',
        path,
      ],
      { encoding: 'utf8' },
    ).trim();
    expect(read).toBe(sha(small));
  });

  it('refuses names that are not plain relative paths, duplicates and misuse', () => {
    for (const name of ['', '/abs', 'a/../b', 'a//b', 'a\\b', './a'])
      expect(() => new ZipWriter().begin({ name, size: 0, modified: 0 })).toThrow(ZipError);
    const zip = new ZipWriter();
    expect(() => zip.end(0)).toThrow(ZipError);
    zip.begin({ name: 'a', size: 1, modified: 0 });
    expect(() => zip.begin({ name: 'b', size: 1, modified: 0 })).toThrow(/not ended/);
    expect(() => zip.finish()).toThrow(ZipError);
    zip.end(0);
    expect(() => zip.begin({ name: 'a', size: 1, modified: 0 })).toThrow(/twice/);
    expect(() => new ZipWriter().begin({ name: 'x', size: -1, modified: 0 })).toThrow(/invalid size/);
  });

  it('writes DOS times from 1980 on and clamps earlier ones to 1980-01-01', () => {
    expect(dosDateTime(0)).toEqual({ time: 0, date: (1 << 5) | 1 });
    const t = new Date(2026, 11, 7, 13, 45, 58).getTime();
    expect(dosDateTime(t)).toEqual({ time: (13 << 11) | (45 << 5) | 29, date: (46 << 9) | (12 << 5) | 7 });
  });
});

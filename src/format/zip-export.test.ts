// Both ways a merge leaves the browser as a zip (streamed to a sink, or a Blob of headers and Files)
// give the same bytes, which Python's zipfile unpacks to the files as they were.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeZip, zipBlob, type ZipInput, type ZipProgress } from './zip-export.ts';

const dir = mkdtempSync(join(tmpdir(), 'zip-export-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bytes(length: number, seed: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i * 31 + seed * 7 + (i >> 9)) & 0xff;
  return out;
}

const inputs: ZipInput[] = [
  // Over one 8 MiB slice, so a file is CRC'd and written in several.
  {
    path: 'my-merge/model.safetensors',
    file: new File([bytes((8 << 20) + 12_345, 1)], 'model.safetensors', {
      lastModified: Date.UTC(2026, 11, 7),
    }),
  },
  {
    path: 'my-merge/README.md',
    file: new File([new TextEncoder().encode('# my merge\n')], 'README.md', {
      lastModified: Date.UTC(2026, 11, 7),
    }),
  },
  { path: 'my-merge/empty.json', file: new File([], 'empty.json', { lastModified: Date.UTC(2026, 11, 7) }) },
];

describe('zip export', () => {
  it('streams and builds a Blob of the same zip, which unpacks to the files byte for byte', async () => {
    const chunks: Uint8Array[] = [];
    const seen: ZipProgress[] = [];
    const length = await writeZip(inputs, async (b) => void chunks.push(b.slice()), {
      onProgress: (p) => seen.push(p),
    });
    const streamed = Buffer.concat(chunks);
    expect(streamed.length).toBe(length);
    // No write holds more than one slice.
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(8 << 20);
    expect(seen.at(-1)?.bytesDone).toBe(seen.at(-1)?.bytesTotal);
    const blob = Buffer.from(await (await zipBlob(inputs)).arrayBuffer());
    expect(blob.equals(streamed)).toBe(true);

    const path = join(dir, 'm.zip');
    writeFileSync(path, streamed);
    const script =
      'import sys,zipfile,hashlib,json\nz=zipfile.ZipFile(sys.argv[1])\nprint(json.dumps({i.filename: hashlib.sha256(z.read(i)).hexdigest() for i in z.infolist()}))';
    const listed = JSON.parse(execFileSync('python3', ['-c', script, path], { encoding: 'utf8' })) as Record<
      string,
      string
    >;
    const expected: Record<string, string> = {};
    for (const input of inputs) {
      const data = new Uint8Array(await input.file.arrayBuffer());
      expected[input.path] = execFileSync(
        'python3',
        ['-c', 'import hashlib,sys;print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'],
        { input: data, encoding: 'utf8' },
      ).trim();
    }
    expect(listed).toEqual(expected);
  });

  it('stops at a cancel and refuses a file that shrank while zipped', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(writeZip(inputs, async () => undefined, { signal: controller.signal })).rejects.toThrow(
      /cancelled/,
    );
    const liar = new File([new Uint8Array(10)], 'x');
    Object.defineProperty(liar, 'size', { value: 20 });
    await expect(zipBlob([{ path: 'm/x', file: liar }])).rejects.toThrow(/changed while it was zipped/);
  });
});

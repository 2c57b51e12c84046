// Real checkpoints written by other tools (shared/checkpoints): each matches its manifest's sha256,
// parses, and survives re-serialisation bit for bit; those the Hugging Face library wrote come out
// byte-identical, since our writer follows its layout.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { at, must } from '../io/checked.ts';
import { nodeFileSource, nodeModelFiles } from '../io/node.ts';
import { memorySource } from '../io/source.ts';
import { openModel } from './model.ts';
import { readSafetensorsHeader } from './safetensors.ts';
import { serializeSafetensors } from './write.ts';

const here = dirname(fileURLToPath(import.meta.url));
const candidates = [
  process.env.MERGE_STUDIO_CHECKPOINTS,
  join(here, '../../shared/checkpoints'),
  join(here, '../../../shared/checkpoints'),
].filter((dir): dir is string => dir !== undefined);
const root = candidates.find((dir) => existsSync(dir));

interface ManifestFile {
  file: string;
  bytes: number;
  sha256: string;
  n_tensors?: number;
  dtypes?: string[];
  metadata?: Record<string, string>;
  tensors?: Record<string, [string, number[]]>;
}

function manifests(dir: string): { folder: string; files: ManifestFile[] }[] {
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((path) => path.endsWith('manifest.json'))
    .sort()
    .map((path) => ({
      folder: join(dir, dirname(path)),
      files: (JSON.parse(readFileSync(join(dir, path), 'utf8')) as { files: ManifestFile[] }).files,
    }));
}

describe.skipIf(root === undefined)(`real checkpoints in ${root ?? 'shared/checkpoints (not found)'}`, () => {
  const all = root === undefined ? [] : manifests(root);
  const weights = all.flatMap(({ folder, files }) =>
    files.filter((f) => f.file.endsWith('.safetensors')).map((f) => ({ ...f, path: join(folder, f.file) })),
  );

  it('lists every .safetensors file in some manifest', () => {
    const onDisk = (readdirSync(must(root, 'checkpoints folder'), { recursive: true }) as string[])
      .filter((path) => path.endsWith('.safetensors'))
      .map((path) => join(must(root, 'checkpoints folder'), path))
      .sort();
    expect(onDisk.length).toBeGreaterThan(0);
    expect(weights.map((w) => w.path).sort()).toEqual(onDisk);
  });

  it('matches every manifest entry in size and sha256', () => {
    for (const { folder, files } of all) {
      for (const entry of files) {
        const bytes = readFileSync(join(folder, entry.file));
        expect(bytes.length, entry.file).toBe(entry.bytes);
        expect(createHash('sha256').update(bytes).digest('hex'), entry.file).toBe(entry.sha256);
      }
    }
  });

  it.each(weights.map((w) => [w.file, w] as const))(
    '%s parses and re-serialises bit for bit',
    async (_, entry) => {
      const source = await nodeFileSource(entry.path);
      try {
        const header = await readSafetensorsHeader(source);
        expect(header.fileSize).toBe(entry.bytes);
        if (entry.n_tensors !== undefined) expect(header.tensors).toHaveLength(entry.n_tensors);
        if (entry.dtypes)
          expect([...new Set(header.tensors.map((t) => t.dtype))].sort()).toEqual([...entry.dtypes].sort());
        if (entry.metadata) expect(header.metadata).toMatchObject(entry.metadata);
        if (entry.tensors) {
          const shapes = Object.fromEntries(header.tensors.map((t) => [t.name, [t.dtype, t.shape]]));
          expect(shapes).toEqual(entry.tensors);
        }

        const tensors = await Promise.all(
          header.tensors.map(async (t) => ({
            name: t.name,
            dtype: t.dtype,
            shape: t.shape,
            data: await source.read(header.dataStart + t.begin, t.end - t.begin),
          })),
        );
        const rewritten = serializeSafetensors(tensors, header.metadata);
        const reread = await readSafetensorsHeader(memorySource('rewritten.safetensors', rewritten));
        expect(reread.metadata).toEqual(header.metadata);
        expect(reread.tensors.map((t) => t.name).sort()).toEqual(tensors.map((t) => t.name).sort());
        const byName = new Map(tensors.map((t) => [t.name, t]));
        for (const t of reread.tensors) {
          const original = must(byName.get(t.name), t.name);
          expect([t.dtype, t.shape]).toEqual([original.dtype, original.shape]);
          const bytes = rewritten.subarray(reread.dataStart + t.begin, reread.dataStart + t.end);
          expect(Buffer.from(bytes).equals(Buffer.from(original.data)), t.name).toBe(true);
        }
      } finally {
        await source.close();
      }
    },
  );

  it('byte-identical re-serialisation holds for the files the Hugging Face library wrote', async () => {
    const hf = weights.filter((w) => w.path.includes('adapter_model'));
    expect(hf.length).toBeGreaterThan(0);
    for (const entry of hf) {
      const bytes = new Uint8Array(readFileSync(entry.path));
      const header = await readSafetensorsHeader(memorySource(entry.file, bytes));
      const rewritten = serializeSafetensors(
        header.tensors.map((t) => ({
          ...t,
          data: bytes.subarray(header.dataStart + t.begin, header.dataStart + t.end),
        })),
        header.metadata,
      );
      expect(Buffer.from(rewritten).equals(Buffer.from(bytes)), entry.file).toBe(true);
    }
  });

  it('opens a single real file as a model through nodeModelFiles', async () => {
    const entry = at(weights, 0, 'real weights files');
    const files = await nodeModelFiles(entry.path);
    try {
      const model = await openModel('real', files);
      expect(model.sharded).toBe(false);
      expect(model.tensors.size).toBe(at(model.shards, 0).tensors.length);
    } finally {
      for (const file of files) await file.source.close();
    }
  });
});

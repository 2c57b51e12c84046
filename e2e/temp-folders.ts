// Files a spec generates, written once into a fresh temporary folder before its tests and removed
// after them: one subfolder per model (or '.' for files at the top).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type Hook = (run: () => Promise<void>) => void;

/** Registers the writing and the cleanup on `test`; the returned function gives a path inside the folder. */
export function tempFolders(
  test: { beforeAll: Hook; afterAll: Hook },
  prefix: string,
  build: () => Record<string, Map<string, Uint8Array>>,
): (...parts: string[]) => string {
  let root = '';
  test.beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), `merge-studio-${prefix}-`));
    for (const [folder, files] of Object.entries(build())) {
      await mkdir(join(root, folder), { recursive: true });
      for (const [name, bytes] of files) await writeFile(join(root, folder, name), bytes);
    }
  });
  test.afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });
  return (...parts) => join(root, ...parts);
}

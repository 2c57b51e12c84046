// One-click export: a named merge (session or library) leaves the browser as one stored zip, streamed
// into the file a save picker gives (an OPFS file stands in for the native picker, the same handle
// type) or, without one, downloaded as a Blob; it unpacks (Python's zipfile, test-only) to files
// byte-identical to the merge's OPFS folder and, for the weights, to the CLI's merge. The card's
// front matter has base_model and library_name; a library merge saves to a picked folder.
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { expect, test as base } from './fixtures.ts';
import { ExportFolderPage } from './export-page.ts';
import { WorkflowPage } from './workflow-page.ts';
import { runCli } from '../src/test/cli.ts';
import { must } from '../src/io/checked.ts';

const test = base.extend<{ workflow: WorkflowPage; folders: ExportFolderPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
  folders: async ({ page }, use) => {
    const folders = new ExportFolderPage(page);
    await folders.installPicker();
    await use(folders);
  },
});

const SAVES = 'saved-zips';
const NAME = 'Demo merge <b>|1';
/** The name as a folder name (src/state/studio/names.ts folderPart). */
const SLUG = 'Demo-merge-b-1';

/** showSaveFilePicker answered with a file of the OPFS folder SAVES, named as suggested. */
async function installSavePicker(page: Page): Promise<void> {
  await page.addInitScript((folder) => {
    Object.defineProperty(window, 'showSaveFilePicker', {
      configurable: true,
      value: async (options: { suggestedName: string }) => {
        const root = await navigator.storage.getDirectory();
        const dir = await root.getDirectoryHandle(folder, { create: true });
        return dir.getFileHandle(options.suggestedName, { create: true });
      },
    });
  }, SAVES);
}

/** Unpacks a zip with Python's zipfile after its CRC check; returns the folder and the entries. */
async function unzip(zip: Buffer, into: string): Promise<{ entries: string[]; dir: string }> {
  await mkdir(into, { recursive: true });
  const path = join(into, 'merge.zip');
  await writeFile(path, zip);
  const script = [
    'import json, sys, zipfile',
    'z = zipfile.ZipFile(sys.argv[1])',
    'bad = z.testzip()',
    'assert bad is None, f"CRC of {bad} differs"',
    'assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist()), "compressed entry"',
    'z.extractall(sys.argv[2])',
    'print(json.dumps(z.namelist()))',
  ].join('\n');
  const out = join(into, 'unpacked');
  const entries = JSON.parse(
    execFileSync('python3', ['-c', script, path, out], { encoding: 'utf8' }),
  ) as string[];
  return { entries, dir: out };
}

/** Every file of the unpacked zip's one top folder equals the merge's OPFS file of that name. */
async function expectEqualsOpfs(
  workflow: WorkflowPage,
  unpacked: { entries: string[]; dir: string },
  folder: string,
  files: string[],
): Promise<void> {
  expect(unpacked.entries.sort()).toEqual(files.map((f) => `${SLUG}/${f}`).sort());
  expect((await readdir(join(unpacked.dir, SLUG))).sort()).toEqual([...files].sort());
  for (const file of files) {
    const fromZip = await readFile(join(unpacked.dir, SLUG, file));
    expect(fromZip.equals(await workflow.mergedFile(folder, file)), `${file} equals the OPFS file`).toBe(
      true,
    );
  }
}

test('a named merge saves as one zip equal to its OPFS folder and the CLI’s merge; the library zips and saves it too', async ({
  workflow,
  folders,
  page,
  browserErrors,
}, testInfo) => {
  test.setTimeout(150_000);
  await installSavePicker(page);
  await workflow.openDemo();
  await page.getByTestId('merge-name').fill(NAME);
  const card = await workflow.merge(1);
  await expect(card.getByTestId('merge-1-name')).toHaveText(NAME);
  const record = must((await workflow.studio()).merges[0], 'the merge');
  expect(record.name).toBe(NAME);
  expect(record.folder.startsWith(`${SLUG}-`)).toBe(true);

  await card.getByTestId('merge-download-zip').click();
  const status = card.getByTestId('merge-1-zip-status');
  await expect(status).toHaveAttribute('data-status', 'done');
  await expect(status).toContainText(`Saved ${SLUG}.zip: ${record.files.length} files`);
  const zip = await folders.file(SAVES, `${SLUG}.zip`);
  // In the test's output folder, which Playwright empties.
  const tmp = testInfo.outputPath('zip');
  const files = record.files.map((f) => f.file);
  await expectEqualsOpfs(workflow, await unzip(zip, tmp), record.folder, files);

  // The card: the Hub's metadata, and the name as its escaped title.
  const card0 = (await workflow.mergedFile(record.folder, 'README.md')).toString('utf8');
  expect(card0).toMatch(/^---\nbase_model: "base"\nlibrary_name: transformers\n/);
  expect(card0).toContain('\n# Demo merge \\<b\\>\\|1\n');

  // The CLI's merge of the same folders with the same method writes the same weights and config.
  const out = testInfo.outputPath('cli-merge');
  const cli = await runCli(
    [
      'merge',
      '--base',
      'public/demo/base',
      ...['key', 'door', 'gems'].flatMap((a) => ['--model', `public/demo/${a}`]),
      '--method',
      record.params.method,
      '--out',
      out,
    ],
    { timeoutMs: 120_000 },
  );
  expect(cli.code, cli.stderr).toBe(0);
  for (const file of ['model.safetensors', 'config.json', 'merge_branches.json'])
    expect(
      (await readFile(join(tmp, 'unpacked', SLUG, file))).equals(await readFile(join(out, file))),
      `${file} from the zip equals the CLI's`,
    ).toBe(true);

  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await workflow.shoot(workflow.exportPanel, `studio-export-zip-${scheme}`, testInfo);
    await workflow.shoot(workflow.mergePanel, `studio-merge-name-${scheme}`, testInfo);
  }
  await page.emulateMedia({ colorScheme: 'light' });

  // After a reload the merge is a library entry: named from its card, zipped to the same bytes.
  await page.reload();
  const entry = page.locator(`[data-testid="merge-card"][data-folder="${record.folder}"]`);
  await expect(entry.getByTestId('merge-card-name')).toHaveText(NAME);
  await entry.getByTestId('merge-download-zip').click();
  await expect(entry.locator('[data-testid$="-zip-status"]')).toHaveAttribute('data-status', 'done');
  expect((await folders.file(SAVES, `${SLUG}.zip`)).equals(zip), 'the library’s zip is the same zip').toBe(
    true,
  );
  // Save to folder… for a library merge: the picked folder gets exactly its files.
  await folders.pickFolder('library-save');
  await entry.locator('[data-testid$="-save"]').click();
  await expect(entry.locator('[data-testid$="-saved"]')).toContainText(
    `Saved ${files.length} files to library-save`,
  );
  expect(await folders.entries('library-save')).toEqual([...files].sort());
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await workflow.shoot(entry, `studio-export-library-zip-${scheme}`, testInfo);
  }
  for (const file of files)
    expect(
      (await folders.file('library-save', file)).equals(await workflow.mergedFile(record.folder, file)),
    ).toBe(true);
  expect(browserErrors.messages).toEqual([]);
});

test('without showSaveFilePicker the zip downloads as a Blob of the same files', async ({
  workflow,
  page,
  browserErrors,
}, testInfo) => {
  await page.addInitScript(() => {
    delete (window as { showSaveFilePicker?: unknown }).showSaveFilePicker;
  });
  await workflow.openDemo();
  await page.getByTestId('merge-name').fill(NAME);
  const card = await workflow.merge(1);
  const record = must((await workflow.studio()).merges[0], 'the merge');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    card.getByTestId('merge-download-zip').click(),
  ]);
  expect(download.suggestedFilename()).toBe(`${SLUG}.zip`);
  const zip = await readFile(await download.path());
  const tmp = testInfo.outputPath('zip');
  await expectEqualsOpfs(
    workflow,
    await unzip(zip, tmp),
    record.folder,
    record.files.map((f) => f.file),
  );
  await expect(card.getByTestId('merge-1-zip-status')).toHaveAttribute('data-status', 'done');
  expect(browserErrors.messages).toEqual([]);
});

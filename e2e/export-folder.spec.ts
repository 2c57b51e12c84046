// "Merge into a folder…": the merge streams straight into a picked folder (an OPFS folder stands in
// for the native picker, so the same handle code path runs), writes the same bytes as the OPFS path,
// lists and reads back its checksums, refuses a non-empty folder or a denied permission, and a
// cancelled merge leaves the picked folder empty.
import { createHash } from 'node:crypto';
import { expect, test as base } from './fixtures.ts';
import { ExportFolderPage } from './export-page.ts';
import { WorkflowPage } from './workflow-page.ts';
import { at, must } from '../src/io/checked.ts';

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

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

test('a merge into a picked folder equals the OPFS merge and is read back with its checksums', async ({
  workflow,
  folders,
  page,
  browserErrors,
}, testInfo) => {
  await workflow.openDemo();
  await workflow.merge(1);
  const inOpfs = at((await workflow.studio()).merges, 0, 'merges');
  expect(inOpfs.location).toBe('opfs');
  // The shards were hashed off the engine worker, by the hash worker (src/worker/hash-worker.ts).
  expect(inOpfs.stages?.hashThread).toBe('hash worker');

  await folders.folderButton.click();
  const card = page.getByTestId('merge-2');
  await expect(card).toBeVisible({ timeout: 45_000 });
  const picked = await folders.lastPicked();
  await expect(card).toHaveAttribute('data-location', 'picked');
  await expect(card).toHaveAttribute('data-folder', picked);
  const readBack = card.getByTestId('merge-2-readback');
  await expect(readBack).toHaveAttribute('data-status', 'done');
  await expect(readBack).toHaveAttribute('data-ok', 'true');

  const record = at((await workflow.studio()).merges, 1, 'merges');
  expect(record.location).toBe('picked');
  expect(record.folder).toBe(picked);
  // Written in place: the folder holds exactly the driver's files, and nothing went to OPFS merges/.
  expect(await folders.entries(picked)).toEqual(record.files.map((f) => f.file).sort());
  expect(await workflow.opfsMerges()).toEqual([inOpfs.folder]);
  expect(record.files.map((f) => f.file)).toEqual(inOpfs.files.map((f) => f.file));

  const weights = await folders.file(picked, 'model.safetensors');
  const reference = await workflow.mergedFile(inOpfs.folder, 'model.safetensors');
  expect(weights.equals(reference), 'model.safetensors equals the OPFS merge byte for byte').toBe(true);
  for (const file of ['config.json', 'mergekit_config.yml'])
    expect((await folders.file(picked, file)).equals(await workflow.mergedFile(inOpfs.folder, file))).toBe(
      true,
    );

  // The listed checksums are the driver's and match the bytes on disk; every row was read back.
  const row = card.locator('[data-file="model.safetensors"]');
  await expect(row.getByTestId('merged-file-sha256')).toHaveText(sha256(weights));
  expect(record.files.find((f) => f.file === 'model.safetensors')?.sha256).toBe(sha256(weights));
  await expect(row.getByTestId('merged-file-readback')).toHaveText('size and sha256 match');
  await expect(card.getByTestId('merged-file-readback')).toHaveCount(record.files.length);
  await expect(card.locator('[data-testid="merged-file-readback"][data-ok="true"]')).toHaveCount(
    record.files.length,
  );
  const report = must((await workflow.studio()).readBack[2]?.result, 'read-back report of merge 2');
  expect(report.extra).toEqual([]);
  for (const file of report.files) {
    expect(file.foundBytes).toBe(file.bytes);
    if (file.sha256 !== undefined) expect(file.foundSha256).toBe(file.sha256);
  }
  // A read-back run again (e.g. after the folder was touched) checks the same files afresh.
  await card.getByTestId('merge-2-readback-run').click();
  await expect(readBack).toHaveAttribute('data-status', 'done');
  await expect(readBack).toHaveAttribute('data-ok', 'true');
  // Already on disk: no downloads and no Save to folder for this merge.
  await expect(card.getByTestId('merged-file-download')).toHaveCount(0);
  await expect(card.getByTestId('merge-2-save')).toHaveCount(0);
  await workflow.shoot(workflow.exportPanel, 'studio-export-picked-folder', testInfo);

  // The arena reads the merge from the picked folder's handle: same bytes, same scores.
  await page.getByTestId('arena-run').click();
  await expect(workflow.arenaPanel).toHaveAttribute('data-status', 'done', { timeout: 90_000 });
  const rows = (await workflow.studio()).arena.result ?? [];
  const scores = (key: string) => rows.find((r) => r.key === key)?.scores;
  expect(scores('merge-2')).toBeDefined();
  expect(scores('merge-2')).toEqual(scores('merge-1'));

  // A byte changed on disk since: the read-back's sha256 (on the shard hash worker) is Node's of the
  // changed bytes, and the row says it no longer matches.
  await folders.flipByte(picked, 'model.safetensors', weights.length - 1);
  const changed = await folders.file(picked, 'model.safetensors');
  expect(sha256(changed)).not.toBe(sha256(weights));
  await card.getByTestId('merge-2-readback-run').click();
  await expect(readBack).toHaveAttribute('data-status', 'done');
  await expect(readBack).toHaveAttribute('data-ok', 'false');
  await expect(row.getByTestId('merged-file-readback')).toHaveAttribute('data-ok', 'false');
  const again = must((await workflow.studio()).readBack[2]?.result, 'second read-back report of merge 2');
  const found = again.files.find((f) => f.file === 'model.safetensors');
  expect(found?.foundBytes).toBe(weights.length);
  expect(found?.foundSha256).toBe(sha256(changed));
  expect(browserErrors.messages).toEqual([]);
});

test('without showDirectoryPicker there is no Merge into a folder…, and Merge writes to OPFS', async ({
  workflow,
  page,
}) => {
  await page.addInitScript(() => {
    delete (window as { showDirectoryPicker?: unknown }).showDirectoryPicker;
  });
  await workflow.openDemo();
  await expect(page.getByTestId('merge-run-folder')).toHaveCount(0);
  const card = await workflow.merge(1);
  await expect(card).toHaveAttribute('data-location', 'opfs');
  expect(await workflow.opfsMerges()).toHaveLength(1);
});

test('a non-empty folder and a denied write permission are refused without touching the folder', async ({
  workflow,
  folders,
  page,
}) => {
  await workflow.openDemo();
  await folders.pickFolder('picked-full', { 'notes.txt': 'keep me' });
  await folders.folderButton.click();
  const error = page.getByTestId('merge-error');
  await expect(error).toContainText('picked-full is not empty');
  await expect(error).toContainText('choose a new or empty folder');
  await expect(workflow.mergePanel).toHaveAttribute('data-status', 'error');
  expect(await folders.entries('picked-full')).toEqual(['notes.txt']);
  expect((await folders.file('picked-full', 'notes.txt')).toString()).toBe('keep me');

  await folders.pickFolder('picked-denied');
  await folders.denyWritePermission();
  await folders.folderButton.click();
  await expect(error).toContainText('Writing to the folder picked-denied was not allowed (denied)');
  expect(await folders.entries('picked-denied')).toEqual([]);
  expect((await workflow.studio()).merges).toEqual([]);

  // The app stays usable: the OPFS merge still runs (the refused attempt used merge id 1).
  await workflow.merge(2);
});

test('Cancel stops a merge into a picked folder and leaves the folder empty', async ({
  workflow,
  folders,
  page,
}) => {
  await workflow.openDemo();
  // Reads are held after the first two: the merge is mid-way at the click below, whatever the load;
  // the gate opens after Cancel so the read in flight returns and the merge sees the cancel.
  await workflow.holdReads(2);
  await folders.pickFolder('picked-cancel');
  await folders.folderButton.click();
  await expect(page.getByTestId('merge-progress')).toContainText('tensor');
  await page.getByTestId('merge-cancel').click();
  await workflow.openReads();

  await expect(page.getByTestId('merge-cancelled')).toBeVisible();
  await expect(workflow.mergePanel).toHaveAttribute('data-status', 'cancelled');
  expect(await folders.entries('picked-cancel')).toEqual([]);
  expect((await workflow.studio()).merges).toEqual([]);
  expect(await workflow.opfsMerges()).toEqual([]);
});

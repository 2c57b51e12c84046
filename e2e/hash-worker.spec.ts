// The shard hash worker (src/worker/hash-worker.ts) failing to start (the test API starts it from a
// missing script: Playwright does not see a nested worker's requests, so it cannot block them). The
// merge that met it fails with a message that says so and leaves nothing in OPFS; the next merge hashes
// on the engine worker and lands, its checksums Node's.
import { createHash } from 'node:crypto';
import { expect, test } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';
import { at } from '../src/io/checked.ts';

test('a hash worker that cannot start fails one merge, and the next hashes on the engine worker', async ({
  page,
}) => {
  const workflow = new WorkflowPage(page);
  await workflow.openDemo();
  await page.evaluate(async () => {
    if (!window.__mergeStudio) throw new Error('the page has no test API (an e2e build is needed)');
    await window.__mergeStudio.breakHashWorker();
  });
  await workflow.mergeButton.click();
  await expect(page.getByTestId('merge-error')).toContainText('the shard hash worker failed', {
    timeout: 45_000,
  });
  expect(await workflow.opfsMerges()).toEqual([]);

  // Merges are numbered by attempt: the failed one was the first.
  await workflow.merge(2);
  const record = at((await workflow.studio()).merges, 0, 'merges');
  expect(record.stages?.hashThread).toBe('engine worker');
  // The failed merge's engine (the one the statistics left) was destroyed with it, not kept.
  expect(record.stages?.warmEngine).toBe(false);
  const weights = await workflow.mergedFile(record.folder, 'model.safetensors');
  expect(record.files.find((f) => f.file === 'model.safetensors')?.sha256).toBe(
    createHash('sha256').update(weights).digest('hex'),
  );
});

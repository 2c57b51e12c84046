// Model folders picked with showDirectoryPicker come back after a reload: an OPFS folder stands in
// for the native picker (the same handle code path), the handle is kept in IndexedDB, and one click
// on the restored recipe reopens it as the same agent.
import { tensorRecords } from '../src/driver/model-transfer.ts';
import { floatTensor, modelFolderFiles, rng } from '../src/test/fixtures.ts';
import { ExportFolderPage } from './export-page.ts';
import { expect, test } from './persistent.ts';

test('an agent folder picked with showDirectoryPicker is reopened with one click after a reload', async ({
  persistent: { page, workflow },
}) => {
  await new ExportFolderPage(page).installPicker();
  await workflow.openDemo();

  // An agent with the demo base's tensors, each element moved at random, written into OPFS.
  const base = (await workflow.studio()).models.find((m) => m.role === 'base')!.report!;
  const random = rng(7);
  const tensors = tensorRecords(base)
    .filter((t) => t.dtype === 'F32')
    .map((t) => {
      const numel = t.shape.reduce((a, b) => a * b, 1);
      return floatTensor(
        t.name,
        'F32',
        t.shape,
        Float32Array.from({ length: numel }, () => random() - 0.5),
      );
    });
  const files = [...modelFolderFiles(tensors)].map(([name, bytes]) => [
    name,
    Buffer.from(bytes).toString('base64'),
  ]);
  await page.evaluate(async (entries) => {
    const root = await navigator.storage.getDirectory();
    const dir = await root.getDirectoryHandle('kept-agent', { create: true });
    for (const [name, base64] of entries) {
      const writable = await (await dir.getFileHandle(name!, { create: true })).createWritable();
      await writable.write(Uint8Array.from(atob(base64!), (c) => c.charCodeAt(0)));
      await writable.close();
    }
    (window as unknown as { __nextPickedFolder?: string }).__nextPickedFolder = 'kept-agent';
  }, files);

  await workflow.removeAllAgents();
  await page.getByTestId('model-new-agent-pick-folder').click();
  await expect(workflow.agentCard(0)).toHaveAttribute('data-status', 'ready');
  expect((await workflow.studio()).models.map((m) => m.label)).toContain('kept-agent');

  await page.reload();
  const restored = page.getByTestId('recipe-restored');
  await expect(restored).toContainText('kept the folders of kept-agent');
  await page.getByTestId('recipe-reopen').click();
  await expect
    .poll(async () =>
      (await workflow.studio()).models.filter((m) => m.role === 'agent').map((m) => [m.label, m.status]),
    )
    .toEqual([['kept-agent', 'ready']]);
  await expect(page.getByTestId('recipe-reopen')).toHaveCount(0);
});

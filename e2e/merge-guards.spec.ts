// Merges into OPFS that must not leave anything looking complete: one the storage estimate cannot
// hold is refused before any folder exists (with the note a private window's small quota gets), and
// an agent file rewritten on disk during the merge fails it, naming the agent and the file, with
// its folder removed.
import { utimes, writeFile } from 'node:fs/promises';
import { floatTensor, modelFolderFiles, rng } from '../src/test/fixtures.ts';
import { expect, test as base } from './fixtures.ts';
import { tempFolders } from './temp-folders.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

const SHAPES: { name: string; shape: number[] }[] = [
  { name: 'model.embed_tokens.weight', shape: [64, 32] },
  { name: 'model.layers.0.mlp.up_proj.weight', shape: [64, 32] },
  { name: 'model.layers.0.mlp.down_proj.weight', shape: [32, 64] },
  { name: 'lm_head.weight', shape: [64, 32] },
];

/** One safetensors file per model: an agent moves a random third of the base's elements. */
function modelFiles(
  seed: number,
  from?: Float32Array[],
): { files: Map<string, Uint8Array>; values: Float32Array[] } {
  const random = rng(seed);
  const values = SHAPES.map(({ shape }, i) => {
    const numel = shape.reduce((a, b) => a * b, 1);
    return Float32Array.from({ length: numel }, (_, e) => {
      const origin = from ? from[i]![e]! : (random() - 0.5) * 0.2;
      return from && random() >= 1 / 3 ? origin : origin + (random() - 0.5) * 0.05;
    });
  });
  const tensors = SHAPES.map((t, i) => floatTensor(t.name, 'F32', t.shape, values[i]!));
  return { files: modelFolderFiles(tensors), values };
}

const at = tempFolders(test, 'guards', () => {
  const base = modelFiles(1);
  return { base: base.files, writer: modelFiles(2, base.values).files };
});

test('a merge the storage estimate cannot hold is refused before any folder exists', async ({
  page,
  workflow,
}) => {
  // The page reads the estimate; a quota of 1 MiB, nearly used, is what a private window may give.
  await page.addInitScript(() => {
    navigator.storage.estimate = () => Promise.resolve({ usage: 1000 * 1024, quota: 1024 * 1024 });
  });
  await workflow.openDemo();
  await expect(page.getByTestId('merge-private-storage')).toContainText('only 1 MiB of storage');
  // The export panel says so too: a private window's storage is memory, lost when it closes.
  await expect(page.getByTestId('export-private-storage')).toContainText('held in memory');
  await workflow.mergeButton.click();
  const error = page.getByTestId('merge-error');
  await expect(error).toContainText(
    'of browser storage, but only 24.00 KiB is free (quota 1.00 MiB, 1000.00 KiB used)',
  );
  await expect(error).toContainText('Merge into a folder…');
  expect(await workflow.opfsMerges()).toEqual([]);
  expect((await workflow.studio()).merges).toEqual([]);
});

test('an agent file rewritten during the merge fails it, naming the agent and file, and leaves no folder', async ({
  page,
  workflow,
}) => {
  await workflow.loadFolders(at('base'), [at('writer')]);
  await workflow.analysisOf(['writer']);
  await workflow.selectMethod('linear');
  // Every read of the merge is held, so the rewrite below lands before the merge checks its inputs
  // whatever the load; the gate opens once the file is rewritten.
  await workflow.holdReads(0);
  await workflow.mergeButton.click();
  await expect.poll(() => workflow.opfsMerges()).toHaveLength(1);

  // The same size with other bytes and a later modification time: a retrained checkpoint saved over it.
  const rewritten = modelFiles(3, modelFiles(1).values).files.get('model.safetensors')!;
  const path = at('writer', 'model.safetensors');
  await writeFile(path, rewritten);
  const later = new Date(Date.now() + 60_000);
  await utimes(path, later, later);
  await workflow.openReads();

  const error = page.getByTestId('merge-error');
  await expect(error).toContainText('writer: model.safetensors changed after it was chosen', {
    timeout: 30_000,
  });
  await expect(page.getByTestId('merge-error-file')).toHaveText('model.safetensors');
  await expect.poll(() => workflow.opfsMerges()).toEqual([]);
  expect((await workflow.studio()).merges).toEqual([]);
});

// A companion file of the base that is not what its name says (a tokenizer_config.json that does not
// parse) is left out of the merged folder, and the studio says so beside the merge's outcome, naming
// the file: issue 38, item 2, as the studio sees it.
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';
import { at } from '../src/io/checked.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

test('a companion file that is not JSON is not copied, and the merge says so', async ({ workflow, page }) => {
  const dir = await mkdtemp(join(tmpdir(), 'merge-studio-warnings-'));
  try {
    const baseDir = join(dir, 'base');
    await cp('public/demo/base', baseDir, { recursive: true });
    await writeFile(join(baseDir, 'tokenizer_config.json'), '{"model_max_length": ');
    await writeFile(join(baseDir, 'special_tokens_map.json'), '{"eos_token": "</s>"}');
    await workflow.loadFolders(baseDir, ['public/demo/key', 'public/demo/door']);
    await expect(page.getByTestId('model-agent-1')).toBeVisible();
    await workflow.merge(1);
    const warning = page.getByTestId('merge-warning');
    await expect(warning).toHaveCount(1);
    await expect(warning).toContainText('tokenizer_config.json is not JSON');
    await expect(warning).toBeInViewport();
    const merged = at((await workflow.studio()).merges, 0, 'merges');
    const files = merged.files.map((f) => f.file);
    expect(files).not.toContain('tokenizer_config.json');
    expect(files).toContain('special_tokens_map.json');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// Sessions: the method, every parameter and the output dtype survive a reload (persistent profile);
// a link made in one browser reproduces the recipe in a fresh one; a bad link is reported and the app
// carries on; mergekit YAML imports into the recipe and a recipe it cannot honour is refused by name.
import { mergeTests } from '@playwright/test';
import { expect, test as base } from './fixtures.ts';
import { test as persistentTest } from './persistent.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = mergeTests(
  base.extend<{ workflow: WorkflowPage }>({
    workflow: async ({ page }, use) => {
      await use(new WorkflowPage(page));
    },
  }),
  persistentTest,
);

/** Sets a DARE-TIES recipe through the UI: λ, seed, one weight, one density, float32 output. */
async function setRecipe(workflow: WorkflowPage): Promise<void> {
  const page = workflow.page;
  await workflow.selectMethod('dare_ties');
  await page.getByTestId('param-lambda').fill('0.7');
  await page.getByTestId('param-seed').fill('42');
  await page.getByTestId('param-weights-door').fill('0.25');
  await page.getByTestId('param-density-key').fill('0.3');
  await page.getByTestId('out-dtype').selectOption('F32');
}

async function expectRecipe(workflow: WorkflowPage): Promise<void> {
  const page = workflow.page;
  await expect(page.getByTestId('method-select')).toHaveValue('dare_ties');
  await expect(page.getByTestId('param-lambda')).toHaveValue('0.7');
  await expect(page.getByTestId('param-seed')).toHaveValue('42');
  await expect(page.getByTestId('param-weights-door')).toHaveValue('0.25');
  await expect(page.getByTestId('param-weights-key')).toHaveValue('1');
  await expect(page.getByTestId('param-density-key')).toHaveValue('0.3');
  await expect(page.getByTestId('out-dtype')).toHaveValue('F32');
}

test('the method and its parameters survive a reload', async ({ persistent: { page, workflow } }) => {
  await workflow.openDemo();
  await setRecipe(workflow);
  await page.reload();
  await workflow.analysisSettled();
  await expectRecipe(workflow);
  await expect(page.getByTestId('recipe-restored')).toHaveAttribute('data-from', 'saved');
  // The demo's models are the ones the recipe named: nothing to pick again.
  await expect(page.getByTestId('recipe-restored')).not.toContainText('choose those models');
});

test('the memory budget sizes the engine card and survives a reload, apart from the recipe', async ({
  persistent: { page, workflow },
}) => {
  await workflow.openDemo();
  await page.getByTestId('engine-card').locator('summary').click();
  // The demo's tensors fit one window each: every method reads them once.
  await expect(page.getByTestId('memory-kept')).toContainText(
    'None needed: the two window sets hold every tensor here whole',
  );
  const before = (await workflow.studio()).check.result?.memory;
  expect(before?.budgetBytes).toBe(512 * 2 ** 20);
  await page.getByTestId('memory-budget-select').selectOption(String(2 ** 31));
  await expect(page.getByTestId('memory-budget')).toContainText('2 GiB for GPU buffers');
  await expect.poll(async () => (await workflow.studio()).check.result?.memory.budgetBytes).toBe(2 ** 31);
  // The room beyond the window buffers grows by what the budget grew.
  const after = (await workflow.studio()).check.result?.memory;
  expect((after?.keptBytes ?? 0) - (before?.keptBytes ?? 0)).toBeGreaterThan(1.4 * 2 ** 30);
  expect((await workflow.studio()).analysis.status).toBe('done');
  await page.reload();
  await workflow.analysisSettled();
  await expect(page.getByTestId('memory-budget-select')).toHaveValue(String(2 ** 31));
  expect((await workflow.studio()).check.result?.memory.budgetBytes).toBe(2 ** 31);
  // It is this machine's setting, not the recipe's: a recipe link does not carry it.
  await page.getByTestId('recipe-link-copy').click();
  expect(await page.getByTestId('recipe-link').inputValue()).not.toContain(String(2 ** 31));
});

test('a link reproduces the recipe in a fresh browser; a bad link is reported', async ({
  workflow,
  browser,
}) => {
  await workflow.openDemo();
  await setRecipe(workflow);
  await workflow.page.getByTestId('recipe-link-copy').click();
  const link = await workflow.page.getByTestId('recipe-link').inputValue();
  expect(new URL(link).hash).toMatch(/^#recipe=/);

  const fresh = await browser.newContext();
  try {
    const other = new WorkflowPage(await fresh.newPage());
    await other.page.goto(link);
    await other.analysisSettled();
    await expectRecipe(other);
    await expect(other.page.getByTestId('recipe-restored')).toHaveAttribute('data-from', 'link');

    await other.page.goto('/#recipe=bm90LWEtcmVjaXBl');
    await other.page.reload();
    await expect(other.page.getByTestId('recipe-problem')).toContainText('could not be read');
    // The app carries on with the demo.
    expect((await other.analysisSettled()).status).toBe('done');
  } finally {
    await fresh.close();
  }
});

test('mergekit YAML imports into the recipe; one it cannot honour is refused by name', async ({
  workflow,
}) => {
  const page = workflow.page;
  await workflow.openDemo();
  const yaml = [
    'merge_method: ties',
    'base_model: base',
    'models:',
    '  - model: key',
    '    parameters: { weight: 0.5, density: 0.4 }',
    '  - model: door',
    '    parameters: { weight: 1, density: 0.6 }',
    '  - model: gems',
    '    parameters: { weight: 2, density: 0.8 }',
    'parameters: { lambda: 1.5, normalize: false }',
    'dtype: float32',
    'out_dtype: float16',
    '',
  ].join('\n');
  await page
    .getByTestId('recipe-yaml-input')
    .setInputFiles({ name: 'ties.yml', mimeType: 'text/yaml', buffer: Buffer.from(yaml) });
  await expect(page.getByTestId('method-select')).toHaveValue('ties');
  await expect(page.getByTestId('param-lambda')).toHaveValue('1.5');
  await expect(page.getByTestId('param-weights-gems')).toHaveValue('2');
  await expect(page.getByTestId('param-density-door')).toHaveValue('0.6');
  await expect(page.getByTestId('param-normalize')).not.toBeChecked();
  await expect(page.getByTestId('out-dtype')).toHaveValue('F16');
  await expect(page.getByTestId('recipe-restored')).toHaveAttribute('data-from', 'yaml');
  await expect(page.getByTestId('recipe-yaml')).toContainText('merge_method: ties');

  await page.getByTestId('recipe-yaml-input').setInputFiles({
    name: 'sliced.yml',
    mimeType: 'text/yaml',
    buffer: Buffer.from('slices: []\nmerge_method: ties\n'),
  });
  await expect(page.getByTestId('recipe-problem')).toContainText('sliced.yml');
  await expect(page.getByTestId('method-select')).toHaveValue('ties');
});

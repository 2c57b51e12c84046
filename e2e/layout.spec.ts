// The studio as one screen: at 1280×800 and 1920×1080 the models and the headline statistics are on
// the first screen and the Merge button is in view while the page scrolls; the step bar and skip links
// reach every step in a few Tabs with a visible focus ring; axe finds no violation at any step.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test as base, type Page } from '@playwright/test';
import { writeLlamaSet } from '../src/bench/llama-set.ts';
import { nodeFolder } from '../src/io/node.ts';
import { axeViolations } from './axe.ts';
import { WorkflowPage } from './workflow-page.ts';
import { must } from '../src/io/checked.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

/** Whether an element lies inside the viewport (whole, or with `rows` px of its top when it is tall). */
async function inView(page: Page, testId: string, rows?: number): Promise<boolean> {
  const box = await page.getByTestId(testId).first().boundingBox();
  const size = must(page.viewportSize(), 'viewport size');
  if (box === null || box.y < 0 || box.x + box.width > size.width) return false;
  return box.y + (rows ?? box.height) <= size.height;
}

for (const viewport of [
  { width: 1280, height: 800 },
  { width: 1920, height: 1080 },
]) {
  test(`at ${viewport.width}×${viewport.height} the first screen has the models, the statistics and Merge`, async ({
    workflow,
    page,
  }, testInfo) => {
    await page.setViewportSize(viewport);
    await workflow.openDemo();
    await expect(page.getByTestId('step-statistics')).toHaveAttribute('data-state', 'done');
    await expect(page.getByTestId('step-models')).toHaveAttribute('data-state', 'done');
    await workflow.shoot(page, `studio-${viewport.width}`, testInfo);
    // Every model card's title and first facts are on the first screen.
    for (const card of ['model-base', 'model-agent-0', 'model-agent-1', 'model-agent-2'])
      expect(await inView(page, card, 120), card).toBe(true);
    expect(await inView(page, 'headline-stats')).toBe(true);
    expect(await inView(page, 'merge-run')).toBe(true);
    // No sideways scrolling.
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
    ).toBeLessThanOrEqual(0);
    // Scrolled down to the merged models, the Merge button is still in view.
    await page.getByTestId('export-panel').scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    expect(await inView(page, 'merge-run')).toBe(true);
  });
}

test('skip links and the step bar reach every step in a few Tabs, with a visible focus ring', async ({
  workflow,
  page,
}) => {
  await workflow.openDemo();
  await page.keyboard.press('Tab');
  await expect(page.getByTestId('skip-load-heading')).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(page.getByTestId('skip-merge-method')).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('method-select')).toBeFocused();
  // From the method, the Merge button is a handful of Tabs away (RAM+: ε, r, α, output dtype).
  let tabs = 0;
  while (!(await page.getByTestId('merge-run').evaluate((el) => el === document.activeElement)) && tabs < 8) {
    await page.keyboard.press('Tab');
    tabs++;
  }
  await expect(page.getByTestId('merge-run')).toBeFocused();
  expect(tabs).toBeLessThanOrEqual(5);
  const ring = await page.getByTestId('merge-run').evaluate((el) => getComputedStyle(el).boxShadow);
  expect(ring).not.toBe('none');

  // Each step of the step bar moves focus to its panel.
  for (const [step, heading] of [
    ['step-export', 'export-heading'],
    ['step-arena', 'arena-heading'],
    ['step-statistics', 'stats-heading'],
  ] as const) {
    await page.getByTestId(step).focus();
    await page.keyboard.press('Enter');
    await expect(page.locator(`#${heading}`)).toBeFocused();
  }

  // The hidden file input's focus ring lands on its own button, not the next one.
  await page.getByTestId('model-new-agent-folder-input').focus();
  const rings = await page
    .getByTestId('model-new-agent-drop')
    .locator('label')
    .evaluateAll((labels) => labels.map((l) => [l.textContent, getComputedStyle(l).boxShadow !== 'none']));
  expect(rings).toEqual([
    ['Folder (upload)', true],
    ['Files', false],
  ]);
});

test('axe finds no violation at any step', async ({ workflow, page }) => {
  test.setTimeout(120_000);
  await workflow.openDemo();
  expect(await axeViolations(page)).toEqual([]);
  await workflow.merge(1);
  expect(await axeViolations(page)).toEqual([]);
  await page.getByTestId('engine-chip').click();
  await expect(page.getByTestId('engine-details')).toBeVisible();
  expect(await axeViolations(page)).toEqual([]);
  await page.getByTestId('arena-run').click();
  await expect(workflow.arenaPanel).toHaveAttribute('data-status', 'done', { timeout: 90_000 });
  expect(await axeViolations(page)).toEqual([]);
  await page.reload();
  await workflow.analysisSettled();
  await expect(page.getByTestId('merge-card')).toHaveCount(1);
  expect(await axeViolations(page)).toEqual([]);
});

test('in dark mode axe finds no violation', async ({ workflow, page }) => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await workflow.openDemo();
  await workflow.merge(1);
  expect(await axeViolations(page)).toEqual([]);
});

test('a 24-layer set at 1920×1080: every agent ready, statistics and Merge on the first screen', async ({
  workflow,
  page,
}, testInfo) => {
  test.setTimeout(120_000);
  const root = await mkdtemp(join(tmpdir(), 'merge-studio-l24-'));
  try {
    await writeLlamaSet(
      { layers: 24, hidden: 64, vocab: 512, agents: 3, seed: 3, shardBytes: 400 * 1024 },
      (name) => nodeFolder(join(root, name)),
    );
    await page.setViewportSize({ width: 1920, height: 1080 });
    await workflow.openDemo();
    await workflow.removeAllAgents();
    await workflow.loadBaseFolder(join(root, 'base'));
    await page.getByTestId('model-new-agent-folder-input').setInputFiles(root);
    // The set folder holds base/ too: it comes in as an agent, removed again.
    await expect(page.getByTestId('model-agent-0-label')).toHaveText('agent-0');
    await page.getByTestId('model-agent-3-remove').click();
    const analysis = await workflow.analysisOf(['agent-0', 'agent-1', 'agent-2']);
    expect(analysis.status).toBe('done');
    await page.evaluate(() => window.scrollTo(0, 0));
    await workflow.shoot(page, 'studio-1920-l24', testInfo);
    expect(await inView(page, 'headline-stats')).toBe(true);
    expect(await inView(page, 'merge-run')).toBe(true);
    // The engine card at this size: the window buffers and what the driver holds fit the budget.
    const memory = await page.evaluate(() => window.__mergeStudio?.studio().check.result?.memory);
    expect(memory && memory.gpuBytes + memory.driverBytes).toBeLessThanOrEqual(memory?.budgetBytes ?? 0);
    const card = page.getByTestId('engine-card');
    await card.locator('summary').click();
    await expect(page.getByTestId('memory-driver')).toBeVisible();
    await expect(page.getByTestId('memory-driver')).toContainText('up to');
    await workflow.shoot(card, 'engine-card-l24', testInfo);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

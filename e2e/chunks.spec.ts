// The page's main chunk carries no chart library: the statistics views, the arena chart, the merge
// comparison and mergekit YAML come in chunks of their own (src/ui/studio/deferred.tsx). Here the
// statistics chunk is held back to show its placeholder, then let through; every chunk is same-origin
// and loads under the page's Content Security Policy.
import { expect, test } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';

test('deferred views: a placeholder until their chunk arrives, then the charts, all under the CSP', async ({
  page,
  network,
  browserErrors,
  baseURL,
}) => {
  test.setTimeout(120_000);
  // A blocked chunk would only show as a securitypolicyviolation event: make it a console error.
  await page.addInitScript(() =>
    document.addEventListener('securitypolicyviolation', (event) =>
      console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`),
    ),
  );
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route(/\/assets\/AnalysisViews-[\w-]+\.js$/, async (route) => {
    await held;
    await route.continue();
  });
  const workflow = new WorkflowPage(page);
  await page.goto('/');

  // The statistics are computed while their views' chunk is still held: the totals are drawn (they
  // are in the main chunk), the views wait in a placeholder inside the panel.
  await expect(workflow.statsPanel).toHaveAttribute('data-status', 'done', { timeout: 60_000 });
  const placeholder = workflow.statsPanel.getByTestId('stats-views-loading');
  await expect(placeholder).toBeVisible();
  expect((await placeholder.boundingBox())?.height).toBeGreaterThanOrEqual(400);
  await expect(page.getByTestId('stats-totals')).toBeVisible();
  await expect(page.getByTestId('atlas')).toHaveCount(0);
  await expect(page.locator('.recharts-wrapper')).toHaveCount(0);

  release();
  await workflow.statsDrawn();
  await expect(page.getByTestId('atlas')).toBeVisible();
  await expect(page.getByTestId('chart-changed').locator('.recharts-bar-rectangle').first()).toBeVisible();

  // The arena's chart is a chunk of its own too, drawn once the scores are in.
  await page.getByTestId('arena-run').click();
  await expect(workflow.arenaPanel).toHaveAttribute('data-status', 'done', { timeout: 90_000 });
  await expect(page.getByTestId('chart-arena').locator('.recharts-bar-rectangle').first()).toBeVisible();
  await expect(page.getByTestId('arena-chart-loading')).toHaveCount(0);

  const origin = new URL(baseURL ?? '').origin;
  const scripts = network.urls.filter((url) => url.endsWith('.js'));
  for (const chunk of ['index', 'AnalysisViews', 'ArenaChart'])
    expect(scripts.some((url) => new RegExp(`/assets/${chunk}-[\\w-]+\\.js$`).test(url))).toBe(true);
  expect(scripts.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  expect(browserErrors.messages).toEqual([]);
});

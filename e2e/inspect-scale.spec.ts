// A measurement, not part of the suite: the tensor view on the 0.5B-shaped set (`npm run gen:llama --
// --out DIR`, 5.15 GB), run only when INSPECT_SCALE_DIR names that folder. It times the view of the
// largest tensor (the 151936 × 896 embedding) and of the head, zoomed in, and one explained element,
// and checks that each view reads the viewed rows once and that the grid sums to the statistics.
import { join } from 'node:path';
import { expect, test as base } from './fixtures.ts';
import { InspectPage } from './inspect-page.ts';
import { WorkflowPage } from './workflow-page.ts';

const DIR = process.env.INSPECT_SCALE_DIR;
const AGENTS = ['agent-0', 'agent-1', 'agent-2'];

const test = base.extend<{ workflow: WorkflowPage; inspect: InspectPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
  inspect: async ({ page }, use) => {
    await use(new InspectPage(page));
  },
});

test.skip(!DIR, 'set INSPECT_SCALE_DIR to a folder written by npm run gen:llama');

test('tensor view draw time on the 0.5B-shaped set', async ({ workflow, inspect, page }) => {
  test.setTimeout(900_000);
  await workflow.openDemo();
  await workflow.removeAllAgents();
  await workflow.loadBaseFolder(join(DIR!, 'base'));
  for (const agent of AGENTS) await workflow.addAgentFolder(join(DIR!, agent));
  await expect
    .poll(
      async () => {
        const data = await workflow.studio();
        return { labels: data.analysisLabels, status: data.analysis.status };
      },
      { timeout: 600_000, intervals: [2000] },
    )
    .toEqual({ labels: AGENTS, status: 'done' });
  const stats = (await workflow.analysisSettled()).result!.tensors;
  const lines: string[] = [];
  for (const tensor of ['model.embed_tokens.weight', 'lm_head.weight']) {
    const started = Date.now();
    const whole = await inspect.open(tensor);
    const wall = Date.now() - started;
    const numel = stats.find((t) => t.name === tensor)!.numel;
    expect(whole.elementsRead).toBe(numel);
    const sums = new Array<number>(2 * whole.agents + 2).fill(0);
    whole.grid.forEach((v, i) => (sums[i % sums.length]! += v));
    expect(sums.slice(2 + whole.agents)).toEqual(stats.find((t) => t.name === tensor)!.changed);
    lines.push(
      `${tensor} [${whole.shape.join(' x ')}] whole: ${whole.windows} windows, grid ${whole.geometry.gridRows} x ${whole.geometry.gridCols} of ${whole.geometry.blockRows} x ${whole.geometry.blockCols} blocks, counted ${whole.computeMs.toFixed(0)} ms, drawn ${whole.drawMs.toFixed(0)} ms, click to grid in the page ${wall} ms`,
    );
    await page.getByTestId('tensor-zoom-in').click();
    const zoomed = await inspect.settled((m) => m.tensor === tensor && m.geometry.rows < whole.geometry.rows);
    lines.push(
      `${tensor} zoomed ×4: rows ${zoomed.geometry.rows}, ${zoomed.elementsRead} elements read, counted ${zoomed.computeMs.toFixed(0)} ms, drawn ${zoomed.drawMs.toFixed(0)} ms`,
    );
  }
  const started = Date.now();
  await workflow.selectMethod('ram');
  const explained = await inspect.explain('model.embed_tokens.weight', 12_345_678, 300_000);
  lines.push(
    `explain model.embed_tokens.weight[12345678] with RAM: ${Date.now() - started} ms, merged ${explained.merged}`,
  );
  console.log(lines.join('\n'));
});

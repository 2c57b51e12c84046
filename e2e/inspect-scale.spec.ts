// A measurement, not part of the suite: the tensor view on the 0.5B-shaped set (`npm run gen:llama --
// --out DIR`, 5.15 GB), run only when INSPECT_SCALE_DIR names that folder. It times the statistics
// pass (for a ratio on the same machine), the view of the largest tensors (the 151936 × 896 embedding
// and head) whole and zoomed in, and one explained element; each view reads the viewed rows once and
// its grid sums to the tensor's statistics.
import { join } from 'node:path';
import { expect, test as base } from './fixtures.ts';
import { InspectPage } from './inspect-page.ts';
import { WorkflowPage } from './workflow-page.ts';
import { at, must } from '../src/io/checked.ts';

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

/** The view's state without its grid (a 512 × 448 grid is slow to pass to Node on every poll). */
function viewState(inspect: InspectPage) {
  return inspect.page.evaluate(() => {
    const api = window.__mergeStudio;
    if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
    const { mask } = api.inspect();
    const r = mask.result;
    return r && mask.status === 'done'
      ? {
          tensor: r.tensor,
          rows: r.geometry.rows,
          computeMs: r.computeMs,
          drawMs: r.drawMs,
          read: r.elementsRead,
        }
      : null;
  });
}

/** Waits (polling lightly) for a finished view that `accept` takes; returns it and the wall time. */
async function timedView(
  inspect: InspectPage,
  start: () => Promise<void>,
  accept: (v: { tensor: string; rows: number }) => boolean,
) {
  const started = Date.now();
  await start();
  // A holder, not a local: the poll's callback sets it, which control flow cannot see.
  const last: { found: Awaited<ReturnType<typeof viewState>> } = { found: null };
  await expect
    .poll(
      async () => {
        const v = await viewState(inspect);
        last.found = v && accept(v) ? v : null;
        return last.found !== null;
      },
      { timeout: 300_000, intervals: [50] },
    )
    .toBe(true);
  return { ...must(last.found, 'a drawn view the test accepts'), wallMs: Date.now() - started };
}

test('tensor view draw time on the 0.5B-shaped set', async ({ workflow, inspect, page }) => {
  test.setTimeout(900_000);
  await workflow.openDemo();
  await workflow.removeAllAgents();
  const dir = must(DIR, 'the 0.5B-shaped set folder');
  await workflow.loadBaseFolder(join(dir, 'base'));
  for (const agent of AGENTS) await workflow.addAgentFolder(join(dir, agent));
  const loaded = Date.now();
  await expect
    .poll(
      async () => {
        const data = await workflow.studio();
        return { labels: data.analysisLabels, status: data.analysis.status };
      },
      { timeout: 600_000, intervals: [500] },
    )
    .toEqual({ labels: AGENTS, status: 'done' });
  const lines = [`load + statistics pass over 5.15 GB: ${Date.now() - loaded} ms`];
  const stats = must((await workflow.analysisSettled()).result, 'analysis result').tensors;
  for (const tensor of ['model.embed_tokens.weight', 'lm_head.weight']) {
    const numel = must(
      stats.find((t) => t.name === tensor),
      tensor,
    ).numel;
    const whole = await timedView(
      inspect,
      async () => {
        await inspect.tensorInput.fill(tensor);
        await page.getByTestId('tensor-view-open').click();
      },
      (v) => v.tensor === tensor,
    );
    expect(whole.read).toBe(numel);
    lines.push(
      `${tensor} whole (${numel} elements × 4 models read once): counted ${whole.computeMs.toFixed(0)} ms, drawn ${whole.drawMs.toFixed(0)} ms, click to result in the page ${whole.wallMs} ms`,
    );
    if (tensor === 'model.embed_tokens.weight') {
      const grid = await inspect.settled((m) => m.tensor === tensor);
      const sums = new Array<number>(2 * grid.agents + 2).fill(0);
      grid.grid.forEach((v, i) => {
        const k = i % sums.length;
        sums[k] = at(sums, k) + v;
      });
      expect(sums.slice(2 + grid.agents)).toEqual(stats.find((t) => t.name === tensor)?.changed);
    }
    const zoomed = await timedView(
      inspect,
      () => page.getByTestId('tensor-zoom-in').click(),
      (v) => v.tensor === tensor && v.rows < 151936,
    );
    lines.push(
      `${tensor} zoomed ×4 (${zoomed.rows} rows, ${zoomed.read} elements read): counted ${zoomed.computeMs.toFixed(0)} ms, drawn ${zoomed.drawMs.toFixed(0)} ms, click to result ${zoomed.wallMs} ms`,
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

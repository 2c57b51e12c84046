// Feedback where the eye is, at LLM scale (a 24-layer set, 3 agents) in a 1280×800 window: the
// statistics tables fit their column or scroll with the first column pinned; the atlas readout sits
// beside the pointer with the hovered cell marked, and a cell's click brings its tensors into view; the
// tensor view keeps a 64 × 256 tensor's aspect and takes an element as [row, col]; a TIES merge's
// progress, Cancel and "cancelled" stay in the window, Cancel holding the focus while it runs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page, TestInfo } from '@playwright/test';
import { writeLlamaSet } from '../src/bench/llama-set.ts';
import { nodeFolder } from '../src/io/node.ts';
import { must } from '../src/io/checked.ts';
import { expect, test } from './fixtures.ts';
import { axeViolations } from './axe.ts';
import { InspectPage, type InspectorJson } from './inspect-page.ts';
import { WorkflowPage } from './workflow-page.ts';
import { copyFile, mkdir } from 'node:fs/promises';

const AGENTS = ['agent-0', 'agent-1', 'agent-2'];
const VIEWPORT = { width: 1280, height: 800 };

let root = '';
let page: Page;
let workflow: WorkflowPage;

/**
 * One page for the file's tests (they run in order in one worker): the set loads once, four 24-layer
 * models and their statistics; after a failure the next worker loads it again.
 */
async function openSet(browser: Browser, testInfo: TestInfo): Promise<void> {
  root = await mkdtemp(join(tmpdir(), 'merge-studio-feedback-'));
  // intermediate 256: the MLP's down projection is 64 × 256, the non-square tensor of the view test.
  await writeLlamaSet(
    { layers: 24, hidden: 64, intermediate: 256, vocab: 512, agents: 3, seed: 11, shardBytes: 400 * 1024 },
    (name) => nodeFolder(join(root, name)),
  );
  const context = await browser.newContext({ baseURL: testInfo.project.use.baseURL, viewport: VIEWPORT });
  page = await context.newPage();
  workflow = new WorkflowPage(page);
  await workflow.openDemo();
  await workflow.removeAllAgents();
  await workflow.loadBaseFolder(join(root, 'base'));
  await expect(page.getByTestId('model-base')).toHaveAttribute('data-status', 'ready', { timeout: 60_000 });
  for (const [t, agent] of AGENTS.entries()) {
    await workflow.addAgentFolder(join(root, agent));
    await expect(page.getByTestId(`model-agent-${t}`)).toHaveAttribute('data-status', 'ready', {
      timeout: 60_000,
    });
  }
  await expect
    .poll(
      async () => {
        const data = await workflow.studio();
        return { labels: data.analysisLabels, status: data.analysis.status };
      },
      { timeout: 180_000 },
    )
    .toEqual({ labels: AGENTS, status: 'done' });
  await workflow.statsDrawn();
  await expect(page.getByTestId('atlas')).toBeVisible();
}

test.beforeAll(async ({ browser }, testInfo) => {
  test.setTimeout(300_000);
  await openSet(browser, testInfo);
});

test.afterAll(async () => {
  await page?.context().close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** A screenshot of the window as it is (focus kept), light and dark; into docs/ with UPDATE_DOCS_SCREENSHOTS. */
async function shoot(name: string, testInfo: TestInfo, target: Locator | Page = page): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const path = testInfo.outputPath(`${name}-${scheme}.png`);
    await target.screenshot({ path });
    await testInfo.attach(`${name}-${scheme}`, { path, contentType: 'image/png' });
    if (process.env.UPDATE_DOCS_SCREENSHOTS) {
      await mkdir('docs/screenshots', { recursive: true });
      await copyFile(path, `docs/screenshots/${name}-${scheme}.png`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/**
 * Whether the element is seen whole in the window: its box inside the viewport, and what the window
 * shows at its corners and centre is the element itself (not clipped by a scrolling column, not
 * covered).
 */
async function seen(locator: Locator): Promise<{ box: string; shown: boolean }> {
  return locator.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const box = [r.left, r.top, r.right, r.bottom].map(Math.round).join(',');
    if (r.width === 0 || r.height === 0) return { box, shown: false };
    if (r.left < 0 || r.top < 0 || r.right > window.innerWidth || r.bottom > window.innerHeight)
      return { box, shown: false };
    // Inset from the corners, which a rounded border leaves to the parent.
    const dx = Math.min(8, r.width / 4);
    const dy = Math.min(8, r.height / 4);
    const points = [
      [r.left + dx, r.top + dy],
      [r.right - dx, r.top + dy],
      [r.left + dx, r.bottom - dy],
      [r.right - dx, r.bottom - dy],
      [(r.left + r.right) / 2, (r.top + r.bottom) / 2],
    ] as const;
    const shown = points.every(([x, y]) => {
      const hit = document.elementFromPoint(x, y);
      return hit !== null && (hit === el || el.contains(hit));
    });
    return { box, shown };
  });
}

test('statistics tables fit their column or scroll sideways with the first column pinned', async ({
  viewport,
}, testInfo) => {
  test.setTimeout(150_000);
  await page.setViewportSize(must(viewport, 'the configured viewport'));
  const panel = page.getByTestId('stats-panel');
  const tables = panel.locator('table.studio-table');
  const count = await tables.count();
  // Totals, per layer, per module, the pairwise matrix and the tensors at least.
  expect(count).toBeGreaterThanOrEqual(5);
  for (let i = 0; i < count; i++) {
    const table = tables.nth(i);
    await table.scrollIntoViewIfNeeded();
    const report = await table.evaluate((t) => {
      const box = (t.closest('.studio-scroll') ?? t.parentElement) as HTMLElement;
      const panelBox = (t.closest('[data-testid="stats-panel"]') as HTMLElement).getBoundingClientRect();
      const outer = box.getBoundingClientRect();
      const name =
        t.getAttribute('data-testid') ?? t.querySelector('caption')?.textContent?.slice(0, 30) ?? '?';
      const headRow = t.querySelector('thead tr') ?? t.querySelector('tr');
      const heads = headRow ? [...headRow.children] : [];
      const first = heads[0] as HTMLElement | undefined;
      const last = heads.at(-1) as HTMLElement | undefined;
      // The box scrolls (or not) inside the panel, never past the panel or the window.
      const inPanel = outer.left >= panelBox.left - 0.5 && outer.right <= panelBox.right + 0.5;
      const inWindow = outer.right <= window.innerWidth;
      const fits = t.scrollWidth <= box.clientWidth + 1;
      if (fits) return { name, fits, inPanel, inWindow, sticky: null, lastSeen: true, firstSeen: true };
      const sticky = first ? getComputedStyle(first).position : null;
      box.scrollLeft = box.scrollWidth;
      const inner = box.getBoundingClientRect();
      const lastBox = last?.getBoundingClientRect();
      const firstBox = first?.getBoundingClientRect();
      const lastSeen =
        lastBox !== undefined && lastBox.right <= inner.right + 1 && lastBox.left >= inner.left;
      const firstSeen =
        firstBox !== undefined && Math.abs(firstBox.left - inner.left) <= 1 && firstBox.width > 20;
      // The last column is not under the pinned first one.
      const apart = lastBox !== undefined && firstBox !== undefined && lastBox.left >= firstBox.right - 1;
      box.scrollLeft = 0;
      return { name, fits, inPanel, inWindow, sticky, lastSeen: lastSeen && apart, firstSeen };
    });
    expect(report.inPanel, `${report.name} inside the statistics panel`).toBe(true);
    expect(report.inWindow, `${report.name} inside the window`).toBe(true);
    if (!report.fits) expect(report.sticky, `${report.name}'s first column`).toBe('sticky');
    expect(report.lastSeen, `${report.name}'s last column reachable`).toBe(true);
    expect(report.firstSeen, `${report.name}'s first column stays in view`).toBe(true);
  }
  // The page itself never scrolls sideways.
  expect(
    await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
  ).toBeLessThanOrEqual(0);
  await page.getByTestId('stats-totals').scrollIntoViewIfNeeded();
  await shoot('feedback-tables-1280', testInfo, page.getByTestId('stats-totals-box'));
  await page.getByTestId('tensor-table').scrollIntoViewIfNeeded();
  await shoot('feedback-tensor-table-1280', testInfo);
});

/** The shortest distance from a point to a box (0 inside it). */
function distance(
  x: number,
  y: number,
  box: { x: number; y: number; width: number; height: number },
): number {
  const dx = Math.max(box.x - x, 0, x - (box.x + box.width));
  const dy = Math.max(box.y - y, 0, y - (box.y + box.height));
  return Math.hypot(dx, dy);
}

/** Moves the pointer onto a cell's centre; returns the point. */
async function hover(cell: Locator): Promise<{ x: number; y: number }> {
  await cell.scrollIntoViewIfNeeded();
  const box = must(await cell.boundingBox(), 'cell box');
  const point = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  await page.mouse.move(point.x, point.y);
  return point;
}

const cellOf = (agent: number, row: string, module: string): Locator =>
  page.locator(
    `[data-testid="atlas-cell"][data-agent="${agent}"][data-row="${row}"][data-module="${module}"]`,
  );

test('the atlas readout is beside the pointer, the hovered cell marked; a click brings its tensors into view', async ({
  viewport,
}, testInfo) => {
  await page.setViewportSize(must(viewport, 'the configured viewport'));
  // Fourteen screenshots and many pointer moves on a shared machine.
  test.setTimeout(240_000);
  const readout = page.getByTestId('atlas-readout');
  for (const [agent, row, module] of [
    [0, 'layers.3', 'q'],
    [2, 'layers.20', 'down'],
    [1, 'lm_head', 'head'],
    [2, 'model.embed_tokens', 'embed'],
  ] as const) {
    const cell = cellOf(agent, row, module);
    const point = await hover(cell);
    await expect(readout).toBeVisible();
    await expect(readout).toContainText(`${row} · ${module} · ${AGENTS[agent]}`);
    const box = must(await readout.boundingBox(), 'readout box');
    expect(distance(point.x, point.y, box), `readout of ${row} ${module}`).toBeLessThanOrEqual(40);
    // Beside the pointer, not on it: the cell stays visible.
    expect(distance(point.x, point.y, box)).toBeGreaterThan(0);
    // Inside the window.
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.y).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(VIEWPORT.width);
    expect(box.y + box.height).toBeLessThanOrEqual(VIEWPORT.height);
    // The hovered cell is marked in its own grid (and the same cell in the others').
    const marks = page.getByTestId('atlas-hover-mark');
    await expect(marks).toHaveCount(1);
    const mark = must(await marks.boundingBox(), 'mark box');
    const cellBox = must(await cell.boundingBox(), 'cell box');
    expect(mark.x).toBeLessThanOrEqual(cellBox.x);
    expect(mark.y).toBeLessThanOrEqual(cellBox.y);
    expect(mark.x + mark.width).toBeGreaterThanOrEqual(cellBox.x + cellBox.width);
    expect(mark.y + mark.height).toBeGreaterThanOrEqual(cellBox.y + cellBox.height);
    expect(mark.width).toBeLessThan(cellBox.width + 6);
    expect(await page.getByTestId('atlas-grid').nth(agent).getByTestId('atlas-hover-mark').count()).toBe(1);
    await expect(page.getByTestId('atlas-hover-echo')).toHaveCount(AGENTS.length - 1);
  }
  // Moved within a cell, the readout follows the pointer.
  const cell = cellOf(1, 'layers.12', 'up');
  const point = await hover(cell);
  const before = must(await readout.boundingBox(), 'readout box');
  await page.mouse.move(point.x + 3, point.y + 2);
  await expect
    .poll(async () => must(await readout.boundingBox(), 'readout box').x)
    .toBeCloseTo(before.x + 3, 0);
  await shoot('feedback-atlas-hover-1280', testInfo);
  // At 1920×1080 too.
  await page.setViewportSize({ width: 1920, height: 1080 });
  const wide = await hover(cellOf(2, 'layers.16', 'o'));
  await expect(readout).toContainText('layers.16 · o · agent-2');
  expect(distance(wide.x, wide.y, must(await readout.boundingBox(), 'readout box'))).toBeLessThanOrEqual(40);
  await shoot('feedback-atlas-hover-1920', testInfo);
  await page.setViewportSize(must(viewport, 'the configured viewport'));
  // Off the grids, the readout goes and no cell is marked.
  await page.mouse.move(2, 2);
  await expect(readout).toBeHidden();
  await expect(page.getByTestId('atlas-hover-mark')).toHaveCount(0);

  // A click lists the cell's tensors and brings them into the window.
  const target = cellOf(1, 'layers.7', 'q');
  await hover(target);
  await target.click();
  const names = JSON.parse(must(await target.getAttribute('data-tensors'), 'data-tensors')) as string[];
  const rows = page.getByTestId('tensor-row');
  await expect(rows).toHaveCount(names.length);
  for (const name of names) {
    const row = page.locator(`[data-testid="tensor-row"][data-name="${name}"] th`);
    await expect.poll(async () => (await seen(row)).shown, { message: `${name} in view` }).toBe(true);
  }
  await shoot('feedback-atlas-click-1280', testInfo);
  // And back to the atlas in one click.
  await page.getByTestId('tensor-filter-atlas').click();
  await expect.poll(async () => (await seen(page.getByTestId('atlas-metric'))).shown).toBe(true);
  await page.getByTestId('tensor-filter-clear').click();
});

test('the tensor view keeps a tensor’s aspect and takes an element as [row, col]', async ({
  viewport,
}, testInfo) => {
  // Four tensor views and three explanations, each a pass in the engine on SwiftShader.
  test.setTimeout(180_000);
  await page.setViewportSize(must(viewport, 'the configured viewport'));
  const inspect = new InspectPage(page);
  const canvas = page.getByTestId('tensor-mask');
  const ratio = async (): Promise<number> => {
    const box = must(await canvas.boundingBox(), 'canvas box');
    return box.width / box.height;
  };
  const down = 'model.layers.5.mlp.down_proj.weight';
  const wide = await inspect.open(down);
  expect(wide.shape).toEqual([64, 256]);
  await expect.poll(ratio).toBeCloseTo(4, 1);
  // A tall one: the embeddings, 512 × 64.
  const embed = await inspect.open('model.embed_tokens.weight');
  expect(embed.shape).toEqual([512, 64]);
  await expect.poll(ratio).toBeCloseTo(1 / 8, 2);
  // A square one stays square.
  await inspect.open('model.layers.5.self_attn.q_proj.weight');
  await expect.poll(ratio).toBeCloseTo(1, 1);

  // Back to the 64 × 256 tensor: an element as [row, col], as row, col, and as a flat index.
  await inspect.open(down);
  await expect.poll(ratio).toBeCloseTo(4, 1);
  const element = page.getByTestId('inspector-element');
  const explained: InspectorJson[] = [];
  for (const text of ['[5, 200]', '5, 200', String(5 * 256 + 200)]) {
    await inspect.indexInput.fill(text);
    await expect(element).toHaveAttribute('data-index', String(5 * 256 + 200));
    await expect(element).toContainText('element 1,480 = [5, 200] of 64 × 256');
    await expect(inspect.indexInput).toHaveAttribute('aria-invalid', 'false');
    // The element is outlined in the view: one element per pixel here, so its block is [5, 200].
    const pick = page.getByTestId('tensor-mask-pick');
    await expect(pick).toHaveAttribute('data-gy', '5');
    await expect(pick).toHaveAttribute('data-gx', '200');
    const image = must(await canvas.boundingBox(), 'canvas box');
    const mark = must(await pick.boundingBox(), 'pick box');
    expect(Math.abs(mark.x + mark.width / 2 - (image.x + (200.5 / 256) * image.width))).toBeLessThan(4);
    expect(Math.abs(mark.y + mark.height / 2 - (image.y + (5.5 / 64) * image.height))).toBeLessThan(4);
    await inspect.run.click();
    await expect(page.getByTestId('inspector')).toHaveAttribute('data-status', 'done', { timeout: 30_000 });
    const json = JSON.parse(
      must(await inspect.result.getAttribute('data-json'), 'data-json'),
    ) as InspectorJson;
    expect([json.tensor, json.index]).toEqual([down, 1480]);
    explained.push(json);
  }
  expect(explained[1]).toEqual(explained[0]);
  expect(explained[2]).toEqual(explained[0]);
  // A position outside the tensor is refused in the field, and Explain waits for a good one.
  await inspect.indexInput.fill('[64, 0]');
  await expect(element).toHaveText('Position 64 on axis 0 is past its size, 64.');
  await expect(inspect.indexInput).toHaveAttribute('aria-invalid', 'true');
  await expect(inspect.run).toBeDisabled();
  await inspect.indexInput.fill('[63, 255]');
  await expect(element).toHaveAttribute('data-index', String(64 * 256 - 1));
  await expect(inspect.run).toBeEnabled();
  await page.getByTestId('inspect-panel').scrollIntoViewIfNeeded();
  expect(await axeViolations(page, '[data-testid="inspect-panel"]')).toEqual([]);
  await shoot('feedback-tensor-view-1280', testInfo, page.getByTestId('inspect-panel'));
});

test('a TIES merge keeps progress, Cancel and "cancelled" in the 1280×800 window, Cancel holding the focus', async ({
  viewport,
}, testInfo) => {
  test.setTimeout(120_000);
  await page.setViewportSize(must(viewport, 'the configured viewport'));
  await workflow.selectMethod('ties');
  // Scrolled down to the tensor table, as one is after reading the statistics.
  await page.getByTestId('tensor-table').scrollIntoViewIfNeeded();
  // The worker's reads are held after a few, so the merge is mid-way for the checks below.
  await workflow.holdReads(3);
  const run = page.getByTestId('merge-run');
  await run.focus();
  await page.keyboard.press('Enter');
  const cancel = page.getByTestId('merge-cancel');
  await expect(cancel).toBeFocused();
  const progress = page.getByTestId('merge-progress');
  await expect(progress).toContainText('tensor');
  for (const [name, locator] of [
    ['progress', progress],
    ['Cancel', cancel],
  ] as const)
    await expect
      .poll(() => seen(locator), { message: `${name} in view while the merge runs` })
      .toMatchObject({
        shown: true,
      });
  await expect(page.getByTestId('step-merge')).toHaveAttribute('data-state', 'working');
  await shoot('feedback-merge-running-1280', testInfo);
  expect(await axeViolations(page, '[data-testid="merge-panel"]')).toEqual([]);
  await expect(cancel).toBeFocused();

  // Enter on the focused Cancel stops it; the message is in view and the focus is back on Merge.
  await page.keyboard.press('Enter');
  await workflow.openReads();
  const cancelled = page.getByTestId('merge-cancelled');
  await expect(cancelled).toBeVisible({ timeout: 30_000 });
  await expect(workflow.mergePanel).toHaveAttribute('data-status', 'cancelled');
  expect(await seen(cancelled)).toMatchObject({ shown: true });
  await expect(run).toBeFocused();
  await shoot('feedback-merge-cancelled-1280', testInfo);

  // At 1920×1080 too, scrolled to the top.
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.evaluate(() => window.scrollTo(0, 0));
  expect(await seen(cancelled)).toMatchObject({ shown: true });
  await shoot('feedback-merge-cancelled-1920', testInfo);
  await page.setViewportSize(must(viewport, 'the configured viewport'));
});

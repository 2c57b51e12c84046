// The statistics views at LLM scale: a generated 24-layer Llama/Qwen2-shaped sharded set (base + 3
// agents) loads through the folder inputs; every atlas cell's integers equal the CPU reference
// summed over the cell's tensors, the exported statistics JSON equals `merge-studio analyze --json`
// on the same files, no SVG label is clipped at 1280×800 or 1920×1080, and axe finds nothing.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { writeLlamaSet, type LlamaSetOptions } from '../src/bench/llama-set.ts';
import { analyzeModels } from '../src/driver/driver.ts';
import { type AnalysisResult } from '../src/driver/job.ts';
import type { TensorStats } from '../src/methods/tensors.ts';
import { openModel } from '../src/format/model.ts';
import { nodeFolder, nodeModelFiles } from '../src/io/node.ts';
import { createCpuEngine } from '../src/engine/cpu-engine.ts';
import { runCli } from '../src/test/cli.ts';
import { AtlasPage } from './atlas-page.ts';
import { axeViolations } from './axe.ts';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';
import { at, must } from '../src/io/checked.ts';

const test = base.extend<{ workflow: WorkflowPage; atlas: AtlasPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
  atlas: async ({ page }, use) => {
    await use(new AtlasPage(page));
  },
});

const SET: LlamaSetOptions = {
  layers: 24,
  hidden: 64,
  vocab: 512,
  agents: 3,
  seed: 1,
  shardBytes: 400 * 1024,
};
const AGENTS = ['agent-0', 'agent-1', 'agent-2'];

let root = '';
let reference: AnalysisResult;

const opened: { close(): Promise<void> }[] = [];

async function openFolder(label: string) {
  const files = await nodeModelFiles(join(root, label));
  opened.push(...files.map((f) => f.source));
  return openModel(label, files);
}

test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'merge-studio-atlas-'));
  await writeLlamaSet(SET, (name) => nodeFolder(join(root, name)));
  reference = await analyzeModels({
    base: await openFolder('base'),
    agents: await Promise.all(AGENTS.map(openFolder)),
    engine: createCpuEngine({ agents: AGENTS.length }),
    epsilon: 1e-5,
  });
  await Promise.all(opened.map((source) => source.close()));
});

test.afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

async function loadSet(workflow: WorkflowPage, atlas: AtlasPage): Promise<void> {
  await workflow.openDemo();
  await workflow.removeAllAgents();
  const page = workflow.page;
  await workflow.loadBaseFolder(join(root, 'base'));
  await expect(page.getByTestId('model-base')).toHaveAttribute('data-status', 'ready', { timeout: 60_000 });
  // One agent at a time, as a person adds them: added back to back, one card was seen to stay at
  // "Reading headers…" (1 run in 4), and the statistics then never start.
  for (const [t, agent] of AGENTS.entries()) {
    await workflow.addAgentFolder(join(root, agent));
    await expect(page.getByTestId(`model-agent-${t}`)).toHaveAttribute('data-status', 'ready', {
      timeout: 60_000,
    });
  }
  // Four models of 13 shards each and a statistics pass on SwiftShader: longer than the default wait.
  await expect
    .poll(
      async () => {
        const data = await workflow.studio();
        return { labels: data.analysisLabels, status: data.analysis.status };
      },
      { timeout: 180_000 },
    )
    .toEqual({ labels: AGENTS, status: 'done' });
  const analysis = await workflow.analysisSettled();
  expect(analysis.result?.tensors).toEqual(reference.tensors);
  await atlas.expectReady();
}

test('every atlas cell equals the CPU reference summed over its tensors; the JSON export equals analyze --json', async ({
  workflow,
  atlas,
  page,
  browserErrors,
}, testInfo) => {
  test.setTimeout(300_000);
  await page.setViewportSize({ width: 1280, height: 800 });
  await loadSet(workflow, atlas);

  // (a) The atlas: per agent, each tensor in exactly one cell, and the cell's integers are the sums.
  const byName = new Map<string, TensorStats>(reference.tensors.map((t) => [t.name, t]));
  const cells = await atlas.cellData();
  expect(cells.length).toBeGreaterThan(0);
  for (let agent = 0; agent < AGENTS.length; agent++) {
    const mine = cells.filter((c) => c.agent === agent);
    const names = mine.flatMap((c) => c.tensors);
    expect([...names].sort()).toEqual([...byName.keys()].sort());
    for (const cell of mine) {
      const members = cell.tensors.map((n) => must(byName.get(n), n));
      const sum = (pick: (t: TensorStats) => number): number => members.reduce((a, t) => a + pick(t), 0);
      expect([cell.numel, cell.changed, cell.unique], `${cell.row} ${cell.module} agent ${agent}`).toEqual([
        sum((t) => t.numel),
        sum((t) => at(t.changed, agent)),
        sum((t) => at(t.unique, agent)),
      ]);
    }
  }
  // Rows as a model computes them, projections told apart; some cells changed, not all alike.
  const rows = [...new Set(cells.map((c) => c.row))];
  expect(rows).toEqual([
    'model.embed_tokens',
    ...Array.from({ length: 24 }, (_, l) => `layers.${l}`),
    'model.norm',
    'lm_head',
  ]);
  expect(new Set(cells.map((c) => c.module))).toEqual(
    new Set(['embed', 'norm_in', 'q', 'k', 'v', 'o', 'norm_post_attn', 'gate', 'up', 'down', 'norm', 'head']),
  );
  expect(new Set(cells.map((c) => c.changed)).size).toBeGreaterThan(10);

  // (b) A cell's click lists exactly its tensors in the tensor table.
  const q7 = atlas.atlas.locator(
    '[data-testid="atlas-cell"][data-agent="1"][data-row="layers.7"][data-module="q"]',
  );
  // The readout beside the pointer names the cell (e2e/feedback.spec.ts checks where it is).
  await q7.hover();
  await expect(page.getByTestId('atlas-readout')).toContainText('layers.7 · q · agent-1');
  await q7.click();
  const expected = JSON.parse((await q7.getAttribute('data-tensors')) ?? '[]') as string[];
  expect([...expected].sort()).toEqual([
    'model.layers.7.self_attn.q_proj.bias',
    'model.layers.7.self_attn.q_proj.weight',
  ]);
  await expect(page.getByTestId('tensor-row')).toHaveCount(2);
  expect(
    (
      await page.getByTestId('tensor-row').evaluateAll((r) => r.map((e) => e.getAttribute('data-name')))
    ).sort(),
  ).toEqual([...expected].sort());

  // (c) The statistics JSON equals the CLI's on the same folders. The CLI names each model by the
  // path it was given, the studio by its folder's name: `path` is compared as the folder name.
  const { text } = await atlas.download(page.getByTestId('export-stats-json'));
  const studio = JSON.parse(text) as { models: { path: string }[] };
  const out = testInfo.outputPath('analyze.json');
  const cli = await runCli(
    [
      'analyze',
      '--cpu',
      '--base',
      join(root, 'base'),
      ...AGENTS.flatMap((a) => ['--model', join(root, a)]),
      '--json',
      out,
    ],
    { timeoutMs: 120_000 },
  );
  expect(cli.code, cli.stderr).toBe(0);
  const written = JSON.parse(await readFile(out, 'utf8')) as { models: { path: string }[] };
  written.models = written.models.map((m) => ({ ...m, path: basename(m.path) }));
  expect(studio).toEqual(written);

  // (d) The HTML report is one file with the statistics and inline SVG, no script, and it opens
  // from disk with nothing fetched.
  const report = await atlas.download(page.getByTestId('export-stats-report'));
  expect(report.text).not.toMatch(/<script|src="http|href="http/);
  const reportPath = testInfo.outputPath('statistics-report.html');
  await writeFile(reportPath, report.text);
  const offline = await page.context().newPage();
  const requests: string[] = [];
  offline.on('request', (r) => requests.push(r.url()));
  await offline.goto(`file://${reportPath}`);
  await expect(offline.locator('svg [data-testid="atlas-cell"]')).toHaveCount(cells.length);
  await expect(offline.locator('table').filter({ hasText: 'layers.23' }).first()).toBeVisible();
  expect(requests).toEqual([`file://${reportPath}`]);
  await offline.close();

  // (e) Tables as CSV (integers without separators; the Σ row is the totals) and the atlas as PNG.
  const csv = await atlas.download(page.getByTestId('stats-layers').getByTestId('save-csv'));
  const sumRow = must(csv.text.trim().split('\r\n').at(-1), "the CSV's last row").split(',');
  expect(sumRow.slice(0, 3)).toEqual([
    'Σ layers',
    String(reference.tensors.length),
    String(reference.totals.numel),
  ]);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    atlas.atlas.getByTestId('save-png').first().click(),
  ]);
  const png = await readFile(await download.path());
  expect(png.subarray(1, 4).toString()).toBe('PNG');
  expect(png.readUInt32BE(16)).toBeGreaterThan(1000);
  expect(browserErrors.messages).toEqual([]);
});

test('no SVG label is clipped at 1280×800 and 1920×1080; axe finds no violations; atlas screenshots', async ({
  workflow,
  atlas,
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  await page.setViewportSize({ width: 1280, height: 800 });
  await loadSet(workflow, atlas);
  // Open the views that appear on demand too: a pair's per-layer overlap, another matrix measure.
  await page.locator('[data-testid="pair-agent-0-agent-1"] button').click();
  await expect(page.getByTestId('pair-layers')).toBeVisible();
  for (const size of [
    { width: 1280, height: 800 },
    { width: 1920, height: 1080 },
  ]) {
    await page.setViewportSize(size);
    await expect(page.getByTestId('chart-changed').locator('.recharts-bar-rectangle').first()).toBeVisible();
    expect(await atlas.clippedTexts(), `${size.width}×${size.height}`).toEqual([]);
    await page.mouse.move(0, 0);
    await workflow.shoot(atlas.atlas, `atlas-${size.width}`, testInfo);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.mouse.move(0, 0);
  expect(await axeViolations(page, '[data-testid="stats-panel"]')).toEqual([]);

  await page.getByTestId('atlas-metric').selectOption('sharedWith');
  await page.getByTestId('atlas-other').selectOption('0');
  expect(await atlas.clippedTexts()).toEqual([]);
  await workflow.shoot(atlas.atlas, 'atlas-shared-with', testInfo);
  await page.getByTestId('pairwise-mode-smaller').click();
  await page.mouse.move(0, 0);
  await workflow.shoot(page.getByTestId('pairwise'), 'atlas-pairwise', testInfo);
  await workflow.shoot(page.getByTestId('upset'), 'atlas-upset', testInfo);
  await workflow.shoot(page.getByTestId('chart-unique-shared'), 'atlas-unique-shared', testInfo);
  await workflow.shoot(atlas.statsPanel, 'atlas-statistics-1280', testInfo);
  expect(await axeViolations(page, '[data-testid="stats-panel"]')).toEqual([]);
});

// The studio's vertical slice in headless Chromium on WebGPU (SwiftShader): the demo loads, its
// statistics equal the CPU reference computed here in Node, a RAM+ merge exported to OPFS equals the
// CPU reference byte for byte, bad inputs are reported without breaking the app, cancel works, and
// the arena scores every model.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { expect, test as base } from './fixtures.ts';
import {
  demoFile,
  mismatchedCheckpoint,
  referenceAnalysis,
  referenceMerge,
  tieDifferences,
  truncatedCheckpoint,
} from './studio-reference.ts';
import { WorkflowPage } from './workflow-page.ts';
import { at, must } from '../src/io/checked.ts';
import { formatBytes } from '../src/ui/format.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

const count = (n: number): string => new Intl.NumberFormat('en-US').format(n);

test('opens on the demo set and shows exactly the CPU reference statistics', async ({
  workflow,
  page,
  browserErrors,
}, testInfo) => {
  const [analysis, expected] = await Promise.all([workflow.openDemo(), referenceAnalysis()]);

  expect(analysis.result?.tensors).toEqual(expected.tensors);
  expect(analysis.result?.totals).toEqual(expected.totals);
  const studio = await workflow.studio();
  expect(studio.models.map((m) => [m.role, m.label, m.status])).toEqual([
    ['base', 'base', 'ready'],
    ['agent', 'key', 'ready'],
    ['agent', 'door', 'ready'],
    ['agent', 'gems', 'ready'],
  ]);
  await expect(page.getByTestId('engine-kind')).toHaveAttribute('data-kind', 'gpu');
  await expect(page.getByTestId('compat-report')).toHaveAttribute('data-ok', 'true');
  await expect(page.getByTestId('model-base-tensors')).toHaveText('7');
  await expect(page.getByTestId('model-base-dtypes')).toHaveText('BF16 51,076');
  // The engine card: the demo's largest tensor fits one window, and its buffers (both sets, counted
  // here buffer by buffer) stay inside the 512 MiB budget it names. Per set: inputs and their staging
  // copies, three outputs, and tie marks for the method that cuts most ties (two rows per agent, 16
  // blocks of one word per 512-element merge workgroup). Input slots are padded to 16 bytes (read as
  // vec4), outputs to 4.
  const largest = Math.max(...expected.tensors.map((t) => t.numel));
  const pad = (bytes: number, to: number): number => Math.ceil(bytes / to) * to;
  const tieBytes = 2 * 3 * Math.ceil(largest / 512) * 16 * 4;
  const perSet = 2 * 4 * pad(largest * 2, 16) + 3 * pad(largest * 2, 4) + tieBytes;
  const memory = studio.check.result?.memory;
  expect(memory).toMatchObject({ windowElements: largest, gpuBytes: 2 * perSet, budgetBytes: 512 * 2 ** 20 });
  await expect(page.getByTestId('memory-gpu')).toContainText(`${count(largest)} elements per window`);
  await expect(page.getByTestId('memory-budget')).toContainText('512 MiB for GPU buffers');
  // Beside them what the driver holds: the read-ahead (the largest tensor of each of the four models,
  // well under their 16 MiB shares of an eighth of the budget), the write-behind (the whole output,
  // under its one 16 MiB window) and the copies on their way to the shard hash worker (the whole
  // output again, under their 64 MiB). They fit the budget beside the window buffers at any size.
  const driver = 4 * largest * 2 + 2 * (memory?.outputBytes ?? NaN);
  expect(memory?.driverBytes).toBe(driver);
  expect(2 * perSet + (80 + 64) * 2 ** 20).toBeLessThanOrEqual(512 * 2 ** 20);
  await expect(page.getByTestId('memory-driver')).toContainText(`up to ${formatBytes(driver)}`);

  // What the page shows is the reference's integers, and the per-layer rows sum to them.
  const totals = expected.totals;
  await expect(page.getByTestId('stats-numel')).toHaveText(count(totals.numel));
  for (const [t, agent] of ['key', 'door', 'gems'].entries()) {
    await expect(page.getByTestId(`stats-changed-${agent}`)).toHaveText(count(at(totals.changed, t)));
    await expect(page.getByTestId(`stats-unique-${agent}`)).toHaveText(count(at(totals.unique, t)));
    await expect(page.getByTestId('layer-row-sum').getByTestId(`layer-agent-${agent}`)).toHaveText(
      `${count(at(totals.changed, t))} / ${count(at(totals.unique, t))}`,
    );
  }
  for (const [c, n] of totals.counts.entries())
    await expect(page.getByTestId(`stats-count-${c}`)).toHaveText(count(n));
  await expect(page.getByTestId('stats-sign-conflicts')).toHaveText(count(totals.signConflicts));
  await expect(page.getByTestId('layer-row-sum').getByTestId('layer-numel')).toHaveText(count(totals.numel));
  // docs/demo.md's pair counts (elements changed by both agents of a pair).
  await expect(page.getByTestId('pair-key-door')).toHaveText('7,633');
  await expect(page.getByTestId('pair-door-gems')).toHaveText('7,588');
  await expect(page.getByTestId('pair-key-gems')).toHaveText('3,022');
  await expect(page.getByTestId('tensor-row')).toHaveCount(7);
  await page.getByTestId('tensor-sort-numel').click();
  await expect(page.getByTestId('tensor-row').first()).toHaveAttribute('data-name', 'layers.0.weight');
  for (const chart of [
    'chart-changed',
    'chart-unique-shared',
    'chart-sign-conflicts',
    'chart-overlap',
    'chart-magnitude',
  ])
    await expect(page.getByTestId(chart).locator('.recharts-bar-rectangle').first()).toBeVisible();

  await workflow.shoot(workflow.loadPanel, 'studio-1-models', testInfo);
  await workflow.shoot(workflow.statsPanel, 'studio-2-statistics', testInfo);
  expect(browserErrors.messages).toEqual([]);
});

test('RAM and RAM+ merges on WebGPU, exported to OPFS, match the CPU reference', async ({
  workflow,
  page,
  browserErrors,
}, testInfo) => {
  const [, ramplus, ram] = await Promise.all([
    workflow.openDemo(),
    referenceMerge('ramplus'),
    referenceMerge('ram'),
  ]);
  await expect(page.getByTestId('method-select')).toHaveValue('ramplus');
  // The λ preview comes from the cached statistics and is what the merge then uses.
  const preview = await page.getByTestId('lambda-key').textContent();

  const card = await workflow.merge(1);

  const record = at((await workflow.studio()).merges, 0, 'merges');
  expect(record.engine).toMatch(/swiftshader/i);
  expect(record.lambdas[0]?.toFixed(6)).toBe(preview);
  for (const file of ['config.json', 'mergekit_config.yml']) {
    const bytes = await workflow.mergedFile(record.folder, file);
    expect(bytes.equals(Buffer.from(must(ramplus.get(file), file))), `${file} equals the CPU reference`).toBe(
      true,
    );
  }
  const weights = await workflow.mergedFile(record.folder, 'model.safetensors');
  // Byte for byte except exact bf16 rounding ties of λ·τ (λ = 1.2 is not an f32): the GPU and the
  // CPU reference break those differently, reported to the engine's owners; anything else fails.
  const ties = await tieDifferences(
    weights,
    must(ramplus.get('model.safetensors'), 'model.safetensors'),
    record.lambdas,
  );
  expect(ties.length).toBeLessThanOrEqual(4);
  const sha = createHash('sha256').update(weights).digest('hex');
  await expect(card.locator('[data-file="model.safetensors"]').getByTestId('merged-file-sha256')).toHaveText(
    sha,
  );
  await expect(page.getByTestId('merge-1-recipe')).toContainText('merge_method: ramplus');

  const downloaded = page.waitForEvent('download');
  await card.locator('[data-file="model.safetensors"]').getByTestId('merged-file-download').click();
  const download = await downloaded;
  expect(download.suggestedFilename()).toBe('model.safetensors');
  expect((await readFile(await download.path())).equals(weights)).toBe(true);
  await workflow.shoot(workflow.mergePanel, 'studio-3-merge', testInfo);
  await workflow.shoot(workflow.exportPanel, 'studio-4-export', testInfo);

  // RAM (λ = 1) has no such ties: its whole file equals the reference.
  await page.getByTestId('method-select').selectOption('ram');
  await workflow.merge(2);
  const second = at((await workflow.studio()).merges, 1, 'merges');
  const ramWeights = await workflow.mergedFile(second.folder, 'model.safetensors');
  expect(ramWeights.equals(Buffer.from(must(ram.get('model.safetensors'), 'model.safetensors')))).toBe(true);
  expect(browserErrors.messages).toEqual([]);
});

test('a corrupt file and a mismatched agent are reported by name and the app stays usable', async ({
  workflow,
  page,
}, testInfo) => {
  await workflow.openDemo();

  await workflow.addAgentFiles([{ name: 'broken.safetensors', buffer: truncatedCheckpoint() }]);
  const broken = workflow.agentCard(3);
  await expect(broken).toHaveAttribute('data-status', 'error');
  await expect(broken.getByTestId('model-agent-3-error-file')).toHaveText('broken.safetensors');
  await expect(broken.getByTestId('model-agent-3-error')).toContainText(
    /truncated|shorter|past the end|header/i,
  );
  // The merge, like the statistics, leaves the refused agent out and says so.
  await expect(workflow.mergeButton).toBeEnabled();
  await expect(workflow.mergeButton).toHaveText('Merge 3 agents');
  await expect(page.getByTestId('merge-left-out')).toContainText('Leaves out broken');
  await workflow.shoot(workflow.loadPanel, 'studio-errors-corrupt', testInfo);
  await broken.getByTestId('model-agent-3-remove').click();
  await expect(workflow.statsPanel).toHaveAttribute('data-status', 'done');
  await expect(workflow.mergeButton).toBeEnabled();
  await expect(page.getByTestId('merge-left-out')).toHaveCount(0);

  await workflow.addAgentFiles([
    { name: 'odd.safetensors', buffer: await mismatchedCheckpoint('layers.1.weight') },
  ]);
  await expect(workflow.agentCard(3)).toHaveAttribute('data-status', 'ready');
  await expect(page.getByTestId('compat-report')).toHaveAttribute('data-ok', 'false');
  const issues = page.getByTestId('compat-issues');
  await expect(issues).toContainText('odd');
  await expect(issues).toContainText('layers.1.weight');
  await expect(issues).toContainText('shape');
  await expect(workflow.mergeButton).toBeDisabled();
  await workflow.shoot(workflow.loadPanel, 'studio-errors-mismatch', testInfo);

  await workflow.agentCard(3).getByTestId('model-agent-3-remove').click();
  await expect(page.getByTestId('compat-report')).toHaveAttribute('data-ok', 'true');
  await expect(workflow.statsPanel).toHaveAttribute('data-status', 'done');
  await workflow.merge(1);
});

test('Cancel stops a running merge and leaves nothing in OPFS', async ({ workflow, page }, testInfo) => {
  await workflow.openDemo();
  // The worker's reads are held after the first two, so the merge is mid-way at the screenshot and
  // the click below however loaded the machine; the gate opens after Cancel, the read in flight
  // returns, and the merge sees the cancel.
  await workflow.holdReads(2);

  await workflow.mergeButton.click();
  await expect(page.getByTestId('merge-progress')).toContainText('tensor');
  await workflow.shoot(workflow.mergePanel, 'studio-cancel-running', testInfo);
  await page.getByTestId('merge-cancel').click();
  await workflow.openReads();

  await expect(page.getByTestId('merge-cancelled')).toBeVisible();
  await expect(workflow.mergePanel).toHaveAttribute('data-status', 'cancelled');
  expect((await workflow.studio()).merges).toEqual([]);
  expect(await workflow.opfsMerges()).toEqual([]);

  // The app carries on: the next merge runs to the end.
  await workflow.merge(2);
  expect(await workflow.opfsMerges()).toHaveLength(1);
});

test('the arena scores the base, every agent and the session’s merge', async ({
  workflow,
  page,
}, testInfo) => {
  test.setTimeout(120_000);
  await workflow.openDemo();
  await workflow.merge(1);

  await page.getByTestId('arena-run').click();
  await expect(workflow.arenaPanel).toHaveAttribute('data-status', 'done', { timeout: 90_000 });

  const manifest = JSON.parse(new TextDecoder().decode(demoFile('', 'manifest.json'))) as {
    models: { name: string; arena: Record<string, number> }[];
  };
  const rows = (await workflow.studio()).arena.result ?? [];
  expect(rows.map((r) => r.kind)).toEqual(['base', 'agent', 'agent', 'agent', 'merge']);
  for (const row of rows.slice(0, 4)) {
    const want = must(
      manifest.models.find((m) => m.name === row.label),
      row.label,
    ).arena;
    for (const task of row.scores.tasks)
      expect(task.score).toBeCloseTo(must(want[task.name], `${row.label} ${task.name}`), 5);
  }
  await expect(page.getByTestId('arena-row-base').getByTestId('arena-score-key')).toHaveText('0.460');
  await expect(page.getByTestId('arena-row-merge-1')).toBeVisible();
  await workflow.shoot(workflow.arenaPanel, 'studio-5-arena', testInfo);
});

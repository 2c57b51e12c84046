// The studio's analysis views on the default demo: the module-type table adds up to the totals,
// drilling into a layer lists only its tensors, the merge branch counts are the statistics' counts
// (and the expected output size is what the merge writes), and every agent's derivation sample is
// shown: high for the demo agents, with a warning for one that does not derive from the base.
import { sampleDerivation } from '../src/driver/derivation.ts';
import { openModel } from '../src/format/model.ts';
import { readSafetensorsHeader } from '../src/format/safetensors.ts';
import { memorySource } from '../src/io/source.ts';
import { AnalysisPage } from './analysis-page.ts';
import { expect, test as base } from './fixtures.ts';
import { DEMO_AGENTS, demoFile, referenceAnalysis } from './studio-reference.ts';
import { at } from '../src/io/checked.ts';

const test = base.extend<{ analysis: AnalysisPage }>({
  analysis: async ({ page }, use) => {
    await use(new AnalysisPage(page));
  },
});

const count = (n: number): string => new Intl.NumberFormat('en-US').format(n);

const demoModel = (name: string) =>
  openModel(name, [
    { name: 'model.safetensors', source: memorySource(name, demoFile(name, 'model.safetensors')) },
  ]);

test('module types add up to the totals and drill-downs filter the tensor table', async ({
  analysis,
  page,
  browserErrors,
}) => {
  const [shown, expected] = await Promise.all([analysis.openDemo(), referenceAnalysis()]);
  expect(shown.totals).toEqual(expected.totals);
  const totals = expected.totals;

  // The Σ row of the module table is the model's totals, and the totals table shows the same.
  await expect(analysis.moduleSum.getByTestId('module-numel')).toHaveText(count(totals.numel));
  await expect(page.getByTestId('stats-numel')).toHaveText(count(totals.numel));
  for (const [t, agent] of DEMO_AGENTS.entries()) {
    await expect(analysis.moduleSum.getByTestId(`module-agent-${agent}`)).toHaveText(
      `${count(at(totals.changed, t))} / ${count(at(totals.unique, t))} / ${count(at(totals.shared, t))}`,
    );
    await expect(page.getByTestId(`stats-changed-${agent}`)).toHaveText(count(at(totals.changed, t)));
  }
  await expect(page.getByTestId('module-sign-conflicts')).toHaveText(count(totals.signConflicts));
  for (const module of ['embedding', 'head', 'other'])
    await expect(page.getByTestId(`module-row-${module}`)).toBeVisible();
  await expect(page.getByTestId('module-row-attention')).toHaveCount(0);
  for (const chart of ['chart-module-changed', 'chart-module-split'])
    await expect(page.getByTestId(chart).locator('.recharts-bar-rectangle').first()).toBeVisible();

  // A layer's button (from the keyboard) filters the table to that layer's tensors.
  await expect(analysis.tensorRows).toHaveCount(7);
  await expect(analysis.filterStatus).toContainText('Showing 7 of 7 tensors');
  await expect(analysis.filterClear).toHaveCount(0);
  await analysis.layerButton('layers.0').focus();
  await page.keyboard.press('Enter');
  await expect(analysis.layerButton('layers.0')).toHaveAttribute('aria-pressed', 'true');
  await expect(analysis.tensorRows).toHaveCount(2);
  expect(await analysis.shownTensors()).toEqual(['layers.0.bias', 'layers.0.weight']);
  await expect(analysis.filterShown).toHaveText('2');
  await expect(analysis.filterTotal).toHaveText('7');
  await expect(analysis.filterLayer).toHaveValue('layers.0');

  // Text and module filters combine with it; clear brings every tensor back.
  await analysis.filterText.fill('WEIGHT');
  expect(await analysis.shownTensors()).toEqual(['layers.0.weight']);
  await analysis.filterClear.click();
  await expect(analysis.tensorRows).toHaveCount(7);
  await expect(analysis.filterText).toHaveValue('');
  await analysis.moduleButton('head').click();
  expect(await analysis.shownTensors()).toEqual(['head.bias', 'head.weight']);
  await analysis.filterModule.selectOption('');
  await analysis.filterLayer.selectOption('task_embed');
  expect(await analysis.shownTensors()).toEqual(['task_embed.weight']);
  await analysis.filterClear.click();

  // A bar of the per-layer chart drills down too.
  await page.getByTestId('chart-changed').locator('.recharts-bar-rectangle').first().click();
  await expect(analysis.filterLayer).not.toHaveValue('');
  const layer = await analysis.filterLayer.inputValue();
  const rows = await analysis.shownTensors();
  expect(rows.length).toBeGreaterThan(0);
  expect(rows.every((name) => name.startsWith(`${layer}.`))).toBe(true);
  expect(browserErrors.messages).toEqual([]);
});

test('branch counts and output size come from the statistics, and derivation shares are shown', async ({
  analysis,
  page,
  browserErrors,
}) => {
  const [, expected] = await Promise.all([analysis.openDemo(), referenceAnalysis()]);
  const counts = expected.totals.counts;

  await expect(analysis.branch('unchanged')).toHaveText(count(at(counts, 0)));
  await expect(analysis.branch('unique')).toHaveText(count(at(counts, 1)));
  await expect(analysis.branch('shared')).toHaveText(count(counts.slice(2).reduce((a, b) => a + b, 0)));
  await expect(analysis.branch('unchanged')).toHaveText(
    (await page.getByTestId('stats-count-0').innerText()).trim(),
  );
  await expect(analysis.branch('unique')).toHaveText(
    (await page.getByTestId('stats-count-1').innerText()).trim(),
  );

  // The demo is all BF16: the same size in BF16, twice the merged tensors' bytes in F32.
  const header = await readSafetensorsHeader(memorySource('base', demoFile('base', 'model.safetensors')));
  const bytes = header.tensors.reduce((a, t) => a + t.end - t.begin, 0);
  const output = page.getByTestId('output-bytes');
  await expect(output).toHaveAttribute('data-bytes', String(bytes));
  await page.getByTestId('out-dtype').selectOption('F32');
  await expect(output).toHaveAttribute('data-bytes', String(2 * bytes));
  await page.getByTestId('merge-run').click();
  // A whole merge: the hang detector workflow.merge gives one, not expect's 15 s for a page's reply.
  await expect.poll(async () => (await analysis.studio()).merges.length, { timeout: 45_000 }).toBe(1);
  expect((await analysis.studio()).merges[0]?.outputBytes).toBe(2 * bytes);
  // The shards' sha256 in WebAssembly: the page's policy allows compiling it, and nothing else.
  expect((await analysis.studio()).merges[0]?.stages.hash).toBe('wasm');
  // On the engine the statistics left: its buffers and kernels made already.
  expect((await analysis.studio()).merges[0]?.stages.warmEngine).toBe(true);

  // Each demo agent shares well over 5% of the sampled elements bit for bit with the base, exactly
  // the sample the same function takes here in Node.
  const baseModel = await demoModel('base');
  for (const [t, agent] of DEMO_AGENTS.entries()) {
    const want = await sampleDerivation(baseModel, await demoModel(agent));
    const cell = analysis.derivation(t);
    await expect(cell).toContainText('bit-identical');
    await expect(cell).toHaveAttribute('data-sampled', String(want.sampled));
    await expect(cell).toHaveAttribute('data-identical', String(want.identical));
    expect(want.sampled).toBeGreaterThan(4000);
    expect(want.sampled).toBeLessThanOrEqual(4096);
    expect(Number(await cell.getAttribute('data-share'))).toBeGreaterThan(0.05);
    await expect(analysis.derivationWarning(t)).toHaveCount(0);
  }

  // An agent whose every element moved a little (lowest mantissa bit flipped) is a dense fine-tune:
  // nothing bit-identical, yet the cosine on the sample says it is this base's.
  const key = demoFile('key', 'model.safetensors');
  const keyHeader = await readSafetensorsHeader(memorySource('key', key));
  const moved = Buffer.from(key);
  for (let i = keyHeader.dataStart; i < moved.length; i += 2) moved.writeUInt8(moved.readUInt8(i) ^ 1, i);
  await analysis.addAgentFiles([{ name: 'moved.safetensors', buffer: moved }]);
  await expect(analysis.page.getByTestId('model-agent-3-derivation-dense')).toBeVisible();
  await expect(analysis.derivationWarning(3)).toHaveCount(0);
  // Only where key moved exactly that bit away from the base does the flip land back on it.
  expect(Number(await analysis.derivation(3).getAttribute('data-share'))).toBeLessThan(0.05);
  // A one-ulp flip barely turns the vector: its cosine is key's own, within bf16 rounding.
  const keyCosine = Number(await analysis.derivation(0).getAttribute('data-cosine'));
  const movedCosine = Number(await analysis.derivation(3).getAttribute('data-cosine'));
  expect(keyCosine).toBeGreaterThan(0.8);
  expect(Math.abs(movedCosine - keyCosine)).toBeLessThan(0.01);

  // An agent of another base (the base's weights in reverse order) is flagged, here and at Merge.
  const base = demoFile('base', 'model.safetensors');
  const baseHeader = await readSafetensorsHeader(memorySource('base', base));
  const reversed = Buffer.from(base);
  const data = Buffer.from(base.subarray(baseHeader.dataStart));
  for (let i = 0; i < data.length / 2; i++)
    reversed.writeUInt16LE(data.readUInt16LE(data.length - 2 - 2 * i), baseHeader.dataStart + 2 * i);
  await analysis.addAgentFiles([{ name: 'stranger.safetensors', buffer: reversed }]);
  await expect(analysis.derivationWarning(4)).toContainText('does not look fine-tuned from this base');
  await expect(analysis.page.getByTestId('merge-lineage-warning')).toContainText('stranger');
  expect(browserErrors.messages).toEqual([]);
});

// Two merges side by side: parameters, the share of elements that differ per layer (equal to a count
// made here in Node from the two exported files), and arena scores with their deltas.
import { readSafetensorsHeader } from '../src/format/safetensors.ts';
import { memorySource } from '../src/io/source.ts';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

/** Elements whose bits differ between two files' tensors of one name (both are bf16 here). */
async function differing(a: Buffer, b: Buffer): Promise<number> {
  const [ha, hb] = await Promise.all([
    readSafetensorsHeader(memorySource('a', a)),
    readSafetensorsHeader(memorySource('b', b)),
  ]);
  let count = 0;
  for (const ta of ha.tensors) {
    const tb = hb.tensors.find((t) => t.name === ta.name)!;
    expect([ta.dtype, tb.dtype]).toEqual(['BF16', 'BF16']);
    for (let at = 0; at < ta.end - ta.begin; at += 2)
      if (a.readUInt16LE(ha.dataStart + ta.begin + at) !== b.readUInt16LE(hb.dataStart + tb.begin + at))
        count++;
  }
  return count;
}

test('two merges side by side: parameters, differing elements per layer, arena deltas', async ({
  workflow,
  page,
}) => {
  test.setTimeout(120_000);
  await workflow.openDemo();
  await workflow.selectMethod('ram');
  await workflow.merge(1);
  await workflow.selectMethod('ties');
  await workflow.merge(2);
  await page.getByTestId('arena-run').click();
  await expect(workflow.arenaPanel).toHaveAttribute('data-status', 'done', { timeout: 90_000 });

  const compare = page.getByTestId('compare-panel');
  const [first, second] = (await workflow.studio()).merges;
  await compare.getByTestId('compare-a').selectOption(`opfs:${first!.folder}`);
  await compare.getByTestId('compare-b').selectOption(`opfs:${second!.folder}`);
  await expect(compare.getByTestId('compare-param-method')).toHaveAttribute('data-differs', 'true');
  await expect(compare.getByTestId('compare-param-method')).toContainText('ram');
  await expect(compare.getByTestId('compare-param-method')).toContainText('ties');
  await compare.getByTestId('compare-run').click();

  const sum = compare.getByTestId('compare-layer-sum');
  await expect(sum).toBeVisible();
  const expected = await differing(
    await workflow.mergedFile(first!.folder, 'model.safetensors'),
    await workflow.mergedFile(second!.folder, 'model.safetensors'),
  );
  expect(expected).toBeGreaterThan(0);
  const rows = await compare
    .getByTestId('compare-layer')
    .evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-differ'))));
  expect(rows.length).toBeGreaterThan(1);
  expect(rows.reduce((x, y) => x + y, 0)).toBe(expected);

  // Arena: the delta is the second's score minus the first's, from the scores the arena gave.
  const arena = (await workflow.studio()).arena.result!;
  const a = arena.find((r) => r.key === `merge-${first!.id}`)!.scores.mean;
  const b = arena.find((r) => r.key === `merge-${second!.id}`)!.scores.mean;
  const mean = compare.getByTestId('compare-arena-mean');
  await expect(mean).toContainText(a.toFixed(3));
  await expect(mean).toContainText(`${b - a >= 0 ? '+' : ''}${(b - a).toFixed(3)}`);
});

// The merges library across reloads, in a persistent profile: a finished merge is listed as complete
// with its files (and its branch counts, from statistics or counted in a TIES merge) after a reload and merge-delete removes its folder from OPFS;
// a merge interrupted by a reload is listed as incomplete.
import { parseBranches } from '../src/driver/merge-branches.ts';
import { must } from '../src/io/checked.ts';
import { expect, test } from './persistent.ts';

test('a merge is listed as complete after a reload, with its files, and merge-delete removes it', async ({
  persistent: { page, workflow },
}) => {
  await workflow.openDemo();
  await workflow.merge(1);
  const record = must((await workflow.studio()).merges[0], 'the first merge');
  // Inline, in the merge panel: what was written and where.
  await expect(page.getByTestId('merge-done')).toContainText(`merges/${record.folder}`);
  await expect(page.getByTestId('merge-done')).toContainText(`${record.files.length} files`);
  // A TIES merge too, whose branch counts are what it summed, counted in the merge.
  await workflow.selectMethod('ties');
  await workflow.merge(2);
  const ties = must((await workflow.studio()).merges[1], 'the TIES merge');

  await page.reload();
  const card = page.locator(`[data-testid="merge-card"][data-folder="${record.folder}"]`);
  await expect(card).toHaveAttribute('data-status', 'complete');
  // The session's record is gone with the reload: these rows come from OPFS itself.
  expect((await workflow.studio()).merges).toEqual([]);
  const files = await card
    .getByTestId('merge-card-file')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-file')));
  expect(files.sort()).toEqual(record.files.map((f) => f.file).sort());
  // The branch counts the merge kept beside its card come back with the library (Compare reads them).
  expect(record.branches?.numel).toBeGreaterThan(0);
  const entry = (await workflow.studio()).library.result?.find((e) => e.folder === record.folder);
  expect(parseBranches(entry?.branches ?? null)).toEqual(record.branches);
  expect(record.branches?.source).toBe('statistics');
  const tiesEntry = (await workflow.studio()).library.result?.find((e) => e.folder === ties.folder);
  expect(ties.branches?.source).toBe('merge');
  expect(ties.branches?.numel).toBe(record.branches?.numel);
  expect(parseBranches(tiesEntry?.branches ?? null)).toEqual(ties.branches);
  await expect(card.getByTestId('merge-card-readme')).toContainText(
    record.files.find((f) => f.sha256)!.sha256!,
  );
  await expect(page.getByTestId('storage-estimate')).toHaveAttribute('data-usage', /^[1-9]\d*$/);

  // Compare after the reload: every λ (kept in each card), and only the parameters each method reads
  // ('—' where one merge's method does not read it; a row for neither method's parameters).
  const compare = page.getByTestId('compare-panel');
  await compare.getByTestId('compare-a').selectOption(`opfs:${record.folder}`);
  await compare.getByTestId('compare-b').selectOption(`opfs:${ties.folder}`);
  const shown = (lambdas: number[]): string => lambdas.map((l) => Number(l.toFixed(6)).toFixed(4)).join(', ');
  const lambdas = compare.getByTestId('compare-param-lambdas');
  await expect(lambdas).toContainText(shown(record.lambdas));
  await expect(lambdas).toContainText(shown(ties.lambdas));
  await expect(lambdas).not.toContainText('—');
  expect(record.params.method).toBe('ramplus');
  await expect(compare.getByTestId('compare-param-r')).toContainText('—');
  await expect(compare.getByTestId('compare-param-density')).toContainText('—');
  for (const unused of ['gamma', 't', 'seed', 'dellaEpsilon'])
    await expect(compare.getByTestId(`compare-param-${unused}`)).toHaveCount(0);

  await card.getByTestId('merge-delete').click();
  await expect(card).toHaveCount(0);
  const tiesCard = page.locator(`[data-testid="merge-card"][data-folder="${ties.folder}"]`);
  await tiesCard.getByTestId('merge-delete').click();
  await expect(tiesCard).toHaveCount(0);
  expect(await workflow.opfsMerges()).toEqual([]);
});

test('a merge interrupted by a reload is listed as incomplete', async ({
  persistent: { page, workflow },
}) => {
  await workflow.openDemo();
  // Every read of the merge is held: it writes its recipe and waits, so the reload below lands
  // mid-merge whatever the load (the reloaded page's worker starts with the gate open).
  await workflow.holdReads(0);
  await workflow.mergeButton.click();
  // Wait until the merge has written its first files, then leave the page mid-merge.
  await expect.poll(() => workflow.opfsMerges()).toHaveLength(1);
  const [folder] = await workflow.opfsMerges();
  await expect.poll(() => workflow.opfsFiles(folder!)).toContain('mergekit_config.yml');
  await page.reload();
  const card = page.locator(`[data-testid="merge-card"][data-folder="${folder}"]`);
  await expect(card).toHaveAttribute('data-status', 'incomplete');
  await expect(card.getByTestId('merge-card-reason')).toContainText('README.md');
  await card.getByTestId('merge-delete').click();
  await expect(card).toHaveCount(0);
  expect(await workflow.opfsMerges()).toEqual([]);
});

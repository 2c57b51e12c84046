// Opening a set: a folder holding base/ and agent folders given to the Base slot puts base/ in the
// base's place and the rest as agents, in place of the demo; a set whose configs name their origin
// is read the same way; a set that says nothing asks which folder is the base and never guesses;
// Make base swaps a card into the base's place; Start empty removes the demo; a refused folder says
// what to do and the statistics run over the others; names given to models survive a reload.
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mergeTests, type TestInfo } from '@playwright/test';
import { writeLlamaSet } from '../src/bench/llama-set.ts';
import { nodeFolder } from '../src/io/node.ts';
import { expect, test as base } from './fixtures.ts';
import { test as persistentTest } from './persistent.ts';
import { axeViolations } from './axe.ts';
import { ExportFolderPage } from './export-page.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = mergeTests(
  base.extend<{ workflow: WorkflowPage }>({
    workflow: async ({ page }, use) => {
      await use(new WorkflowPage(page));
    },
  }),
  persistentTest,
);

let root = '';
const at = (...parts: string[]): string => join(root, ...parts);

/** A small llama set (base, agent-0..n-1) written under `folder`, each model renamed by `names`. */
async function llamaSet(folder: string, agents: number, names: Record<string, string> = {}, layers = 2) {
  await writeLlamaSet({ layers, hidden: 32, vocab: 64, agents, seed: 11, shardBytes: 16 * 1024 }, (name) =>
    nodeFolder(at(folder, names[name] ?? name)),
  );
}

/** Rewrites a folder's config.json with these fields added. */
async function patchConfig(folder: string, fields: Record<string, unknown>): Promise<void> {
  const path = at(folder, 'config.json');
  const config = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  await writeFile(path, JSON.stringify({ ...config, ...fields }, null, 2));
}

test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'merge-studio-open-set-'));
  await llamaSet('set', 3);
  // No folder named base: the agents' configs name the folder they were trained from.
  await llamaSet('lineage', 2, { base: 'qwen-start', 'agent-0': 'rl-a', 'agent-1': 'rl-b' });
  await patchConfig('lineage/rl-a', { _name_or_path: '/checkpoints/qwen-start' });
  await patchConfig('lineage/rl-b', { _name_or_path: 'qwen-start/' });
  // Nothing says which is the base.
  await llamaSet('plain', 2, { base: 'm-one', 'agent-0': 'm-two', 'agent-1': 'm-three' });
  // Two folders the studio cannot open: one without weights, one whose weights file is not one.
  await llamaSet('refused', 2);
  await mkdir(at('refused', 'no-weights'));
  await cp(at('refused', 'base', 'config.json'), at('refused', 'no-weights', 'config.json'));
  await mkdir(at('refused', 'malformed'));
  await cp(at('refused', 'base', 'config.json'), at('refused', 'malformed', 'config.json'));
  await writeFile(at('refused', 'malformed', 'model.safetensors'), 'not a safetensors file at all');
});

test.afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

type Row = [string, string, string];
const rows = async (workflow: WorkflowPage): Promise<Row[]> =>
  (await workflow.studio()).models.map((m): Row => [m.role, m.label, m.status]);

test('the set folder given to the Base slot yields base = base, its agents in place of the demo', async ({
  workflow,
  page,
  browserErrors,
}) => {
  await workflow.openDemo();
  await workflow.loadBaseFolder(at('set'));
  await expect
    .poll(() => rows(workflow))
    .toEqual([
      ['base', 'base', 'ready'],
      ['agent', 'agent-0', 'ready'],
      ['agent', 'agent-1', 'ready'],
      ['agent', 'agent-2', 'ready'],
    ]);
  await expect(page.getByTestId('set-opened')).toContainText(
    'Opened the set set: the base is base (the folder is named base), with 3 agents',
  );
  const analysis = await workflow.analysisOf(['agent-0', 'agent-1', 'agent-2']);
  expect(analysis.result?.totals.changed.every((n) => n > 0)).toBe(true);
  await expect(workflow.mergeButton).toBeEnabled();
  expect(browserErrors.messages).toEqual([]);
});

test('a set without base/ takes the folder the agents’ configs name as their origin', async ({
  workflow,
  page,
}) => {
  await workflow.openDemo();
  await workflow.loadBaseFolder(at('lineage'));
  await expect
    .poll(() => rows(workflow))
    .toEqual([
      ['base', 'qwen-start', 'ready'],
      ['agent', 'rl-a', 'ready'],
      ['agent', 'rl-b', 'ready'],
    ]);
  await expect(page.getByTestId('set-opened')).toContainText('rl-a, rl-b say they were made from qwen-start');
  await workflow.analysisOf(['rl-a', 'rl-b']);
});

test('a set that does not say which folder is the base asks, and opens what the user answers', async ({
  workflow,
  page,
}) => {
  await workflow.openDemo();
  const demo = await rows(workflow);
  await workflow.loadBaseFolder(at('plain'));
  const question = page.getByTestId('set-question');
  await expect(question).toContainText('Which folder of plain is the base?');
  await expect(question).toContainText('does not guess');
  const choices = question.getByTestId('set-question-choice');
  await expect(choices).toHaveCount(3);
  expect(await choices.evaluateAll((b) => b.map((e) => e.getAttribute('data-label')))).toEqual([
    'm-one',
    'm-three',
    'm-two',
  ]);
  // Nothing was loaded while the question is open.
  expect(await rows(workflow)).toEqual(demo);
  await question.getByRole('button', { name: 'm-two is the base' }).click();
  await expect(question).toHaveCount(0);
  await expect
    .poll(() => rows(workflow))
    .toEqual([
      ['base', 'm-two', 'ready'],
      ['agent', 'm-one', 'ready'],
      ['agent', 'm-three', 'ready'],
    ]);
  await expect(page.getByTestId('set-opened')).toContainText('the base is m-two (you chose m-two)');
  await workflow.analysisOf(['m-one', 'm-three']);

  // Cancel opens nothing.
  await workflow.loadBaseFolder(at('plain'));
  await question.getByTestId('set-question-cancel').click();
  await expect(question).toHaveCount(0);
  expect((await rows(workflow))[0]).toEqual(['base', 'm-two', 'ready']);
});

test('Make base swaps an agent into the base’s place; the old base becomes an agent', async ({
  workflow,
  page,
}) => {
  await workflow.openDemo();
  await workflow.loadBaseFolder(at('set'));
  await workflow.analysisOf(['agent-0', 'agent-1', 'agent-2']);
  await page.getByTestId('model-agent-1-make-base').click();
  await expect
    .poll(() => rows(workflow))
    .toEqual([
      ['base', 'agent-1', 'ready'],
      ['agent', 'agent-0', 'ready'],
      ['agent', 'base', 'ready'],
      ['agent', 'agent-2', 'ready'],
    ]);
  await expect(page.getByTestId('model-base-label')).toHaveText('agent-1');
  // The note on why base/ was the base goes with it.
  await expect(page.getByTestId('set-opened')).toHaveCount(0);
  const analysis = await workflow.analysisOf(['agent-0', 'base', 'agent-2']);
  expect(analysis.result?.totals.changed).toHaveLength(3);
  // And back: the engine's models follow the cards, so the first statistics come back.
  await page.getByTestId('model-agent-1-make-base').click();
  await workflow.analysisOf(['agent-0', 'agent-1', 'agent-2']);
  expect((await rows(workflow))[0]).toEqual(['base', 'base', 'ready']);
});

/** The load step's screenshot in the light and the dark scheme. */
async function shootBoth(workflow: WorkflowPage, name: string, testInfo: TestInfo): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await workflow.page.emulateMedia({ colorScheme: scheme });
    await workflow.shoot(workflow.loadPanel, `${name}-${scheme}`, testInfo);
    // The new notices, buttons and help keep to WCAG AA in both schemes.
    expect(await axeViolations(workflow.page, '[data-testid="load-panel"]')).toEqual([]);
  }
}

test('Start empty removes the demo checkpoints', async ({ workflow, page }, testInfo) => {
  test.setTimeout(120_000);
  await workflow.openDemo();
  await page.getByTestId('load-empty').click();
  await expect.poll(() => rows(workflow)).toEqual([]);
  await expect(page.getByTestId('model-base')).toHaveAttribute('data-status', 'empty');
  await expect(page.getByTestId('load-panel')).toHaveAttribute('data-source', 'none');
  await expect(page.getByTestId('load-empty')).toBeDisabled();
  await expect(workflow.mergeButton).toBeDisabled();
  expect((await workflow.studio()).analysis.status).toBe('idle');
  await shootBoth(workflow, 'open-set-empty', testInfo);
});

test('refused folders say what to do; the statistics and the merge run over the others', async ({
  workflow,
  page,
}, testInfo) => {
  // Five models, two screenshots and two axe passes on a shared machine.
  test.setTimeout(150_000);
  await workflow.openDemo();
  await workflow.loadBaseFolder(at('refused'));
  await expect
    .poll(() => rows(workflow))
    .toEqual([
      ['base', 'base', 'ready'],
      ['agent', 'agent-0', 'ready'],
      ['agent', 'agent-1', 'ready'],
      ['agent', 'malformed', 'error'],
      ['agent', 'no-weights', 'error'],
    ]);
  await expect(page.getByTestId('model-agent-2-error')).toContainText('model.safetensors');
  await expect(page.getByTestId('model-agent-3-error')).toContainText('no .safetensors weights');
  for (const card of ['model-agent-2', 'model-agent-3'])
    await expect(page.getByTestId(`${card}-excluded`)).toContainText(
      'Left out of the statistics and the merge. Choose other files for it below, or remove it.',
    );
  const analysis = await workflow.analysisOf(['agent-0', 'agent-1']);
  expect(analysis.result?.totals.changed).toHaveLength(2);
  // The merge leaves them out, as the statistics do, and says so.
  await expect(workflow.mergeButton).toBeEnabled();
  await expect(workflow.mergeButton).toContainText('Merge 2 agents');
  await expect(page.getByTestId('merge-left-out')).toContainText('Leaves out malformed, no-weights');
  await shootBoth(workflow, 'open-set-refused', testInfo);
  await page.getByTestId('model-agent-3-remove').click();
  await page.getByTestId('model-agent-2-remove').click();
  await expect(workflow.mergeButton).toBeEnabled();
  await expect(page.getByTestId('merge-left-out')).toHaveCount(0);
});

test('names given to a set’s models survive a reload: picking the set again brings them back', async ({
  persistent: { page, workflow },
}) => {
  await workflow.openDemo();
  await workflow.loadBaseFolder(at('set'));
  await workflow.analysisOf(['agent-0', 'agent-1', 'agent-2']);
  await page.getByTestId('model-agent-0-rename').click();
  await page.getByTestId('model-agent-0-rename-input').fill('planner');
  await page.getByTestId('model-agent-0-rename-input').press('Enter');
  await expect(page.getByTestId('model-agent-0-label')).toHaveText('planner');

  await page.reload();
  await workflow.analysisSettled();
  await expect(page.getByTestId('recipe-restored')).toContainText('agents planner, agent-1, agent-2');
  await workflow.loadBaseFolder(at('set'));
  await expect
    .poll(() => rows(workflow))
    .toEqual([
      ['base', 'base', 'ready'],
      ['agent', 'planner', 'ready'],
      ['agent', 'agent-1', 'ready'],
      ['agent', 'agent-2', 'ready'],
    ]);
  // The models the saved recipe names are the ones loaded: nothing left to pick again.
  await expect(page.getByTestId('recipe-restored')).not.toContainText('choose');
});

test('a set chosen with the folder picker is reopened after a reload with its base and the names given', async ({
  persistent: { page, workflow },
}) => {
  test.setTimeout(120_000);
  await new ExportFolderPage(page).installPicker();
  await workflow.openDemo();
  // The set's files copied into OPFS, where the stand-in picker hands folders out from.
  const files: [string, string, string][] = [];
  for (const folder of await readdir(at('set')))
    for (const name of await readdir(at('set', folder)))
      files.push([folder, name, (await readFile(at('set', folder, name))).toString('base64')]);
  await page.evaluate(async (entries) => {
    const root = await navigator.storage.getDirectory();
    const set = await root.getDirectoryHandle('picked-set', { create: true });
    for (const [folder, name, base64] of entries) {
      const dir = await set.getDirectoryHandle(folder, { create: true });
      const writable = await (await dir.getFileHandle(name, { create: true })).createWritable();
      await writable.write(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)));
      await writable.close();
    }
    (window as unknown as { __nextPickedFolder?: string }).__nextPickedFolder = 'picked-set';
  }, files);
  // The demo's base is loaded: its other files are behind the card's disclosure.
  await page.getByTestId('model-base').locator('summary').click();
  await page.getByTestId('model-base-pick-folder').click();
  await workflow.analysisOf(['agent-0', 'agent-1', 'agent-2']);
  expect((await rows(workflow))[0]).toEqual(['base', 'base', 'ready']);
  await page.getByTestId('model-agent-1-rename').click();
  await page.getByTestId('model-agent-1-rename-input').fill('coder');
  await page.getByTestId('model-agent-1-rename-input').press('Enter');
  await expect(page.getByTestId('model-agent-1-label')).toHaveText('coder');

  await page.reload();
  await workflow.analysisSettled();
  await expect(page.getByTestId('recipe-restored')).toContainText('the browser kept their folders');
  await page.getByTestId('recipe-reopen').click();
  await expect
    .poll(() => rows(workflow))
    .toEqual([
      ['base', 'base', 'ready'],
      ['agent', 'agent-0', 'ready'],
      ['agent', 'coder', 'ready'],
      ['agent', 'agent-2', 'ready'],
    ]);
  await expect(page.getByTestId('recipe-reopen')).toHaveCount(0);
});

test('the load step with a 24-layer set, light and dark', async ({ workflow, page }, testInfo) => {
  // 24 layers take SwiftShader a while to read through.
  test.setTimeout(180_000);
  await llamaSet('deep', 3, {}, 24);
  await workflow.openDemo();
  await workflow.loadBaseFolder(at('deep'));
  await expect(page.getByTestId('headline-stats')).toHaveAttribute('data-status', 'done', {
    timeout: 120_000,
  });
  expect((await workflow.studio()).analysisLabels).toEqual(['agent-0', 'agent-1', 'agent-2']);
  await expect(workflow.agentCard(2)).toHaveAttribute('data-status', 'ready');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.getByTestId('load-panel').scrollIntoViewIfNeeded();
    await workflow.shoot(page, `open-set-${scheme}`, testInfo);
  }
  await workflow.loadBaseFolder(at('plain'));
  await expect(page.getByTestId('set-question')).toBeVisible();
  await shootBoth(workflow, 'open-set-question', testInfo);
});

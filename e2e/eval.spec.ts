// The Evaluate step on the tiny Qwen2 set (src/test/eval-fixtures/qwen2-set: a base and two agents):
// the studio's scores equal `merge-studio eval`'s for the same models and probes; a run can be
// cancelled mid-way; a bad probe line and a model without a tokenizer are shown by name, and the
// studio stays usable.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCli } from '../src/test/cli.ts';
import type { EvalResult } from '../src/worker/protocol.ts';
import { axeViolations } from './axe.ts';
import { EvalPage } from './eval-page.ts';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage; evaluation: EvalPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
  evaluation: async ({ page }, use) => {
    await use(new EvalPage(page));
  },
});

const FIXTURES = resolve('src/test/eval-fixtures');
const SET = join(FIXTURES, 'qwen2-set');
const MODELS = ['base', 'agent-0', 'agent-1'].map((name) => join(SET, name));
const PROBES = join(FIXTURES, 'probes.jsonl');
const MAX_NEW_TOKENS = 4;

let tmp = '';
/** agent-0's own probe set: the fixture's first lines, in a file named after the agent. */
let agentProbes = '';
/** The fixture's probes and agent-0's in one file, for the CLI's one --probes. */
let allProbes = '';

test.beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'merge-studio-eval-'));
  const lines = (await readFile(PROBES, 'utf8')).split('\n').filter((l) => l.trim() !== '');
  const own = lines.slice(0, 3).map((l) => {
    const { prompt, completion } = JSON.parse(l) as { prompt: string; completion: string };
    return { prompt, completion };
  });
  agentProbes = join(tmp, 'agent-0.jsonl');
  await writeFile(agentProbes, own.map((p) => JSON.stringify(p)).join('\n'));
  // Named as the fixture, so that its lines without "set" are of the same set.
  await mkdir(join(tmp, 'cli'));
  allProbes = join(tmp, 'cli', 'probes.jsonl');
  await writeFile(
    allProbes,
    [...lines, ...own.map((p) => JSON.stringify({ ...p, set: 'agent-0' }))].join('\n'),
  );
});

test.afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** The Qwen2 set loaded into the studio, its statistics done (so no other job reads meanwhile). */
async function loadSet(workflow: WorkflowPage): Promise<void> {
  const [baseDir, ...agents] = MODELS;
  await workflow.loadFolders(baseDir!, agents);
  await workflow.analysisOf(['agent-0', 'agent-1']);
}

test('the studio scores the base and both agents as `merge-studio eval` does', async ({
  workflow,
  evaluation,
  page,
  browserErrors,
}, testInfo) => {
  test.setTimeout(240_000);
  await loadSet(workflow);
  await evaluation.giveProbes(PROBES, agentProbes);
  await evaluation.maxNewTokens.fill(String(MAX_NEW_TOKENS));
  await expect(evaluation.run).toHaveText('Evaluate 3 models');
  await evaluation.run.click();
  const studio = await evaluation.resultJson();

  const out = join(tmp, 'cli.json');
  const cli = await runCli(
    [
      'eval',
      ...MODELS.flatMap((m) => ['--model', m]),
      '--probes',
      allProbes,
      '--max-new-tokens',
      String(MAX_NEW_TOKENS),
      '--json',
      out,
    ],
    { timeoutMs: 180_000 },
  );
  expect(cli.code, cli.stderr).toBe(0);
  const expected = JSON.parse(await readFile(out, 'utf8')) as EvalResult;

  // The same models by label (the folders' names in both); paths differ (the studio has no file paths).
  expect(studio.models.map((m) => m.label)).toEqual(['base', 'agent-0', 'agent-1']);
  expect(studio.models.map((m) => m.label)).toEqual(expected.models.map((m) => m.label));
  // Every number and text, exactly.
  expect(studio.examples).toEqual(expected.examples);
  expect(studio.sets).toEqual(expected.sets);
  expect(studio.examples.some((e) => e.generated.some((ids) => ids.length > 0))).toBe(true);

  // The table shows every set × model.
  for (const set of expected.sets)
    for (const [m] of expected.models.entries())
      await expect(
        page.getByTestId(`eval-cell-${set.set.replace(/[^A-Za-z0-9_-]/g, '_')}-${m}`),
      ).toContainText(`NLL ${set.meanNll[m]!.toFixed(3)}`);
  // On agent-0's own set, the base and agent-1 are measured against agent-0.
  const own = expected.sets.find((set) => set.set === 'agent-0')!;
  expect(own.top1Rate[1]).toBeGreaterThan(0);
  for (const m of [0, 2]) {
    const retention = own.top1Rate[m]! / own.top1Rate[1]!;
    const cell = page.getByTestId(`eval-cell-agent-0-${m}`);
    await expect(cell).toContainText(`retains ${(100 * retention).toFixed(1)}%`);
    await expect(cell).toHaveAttribute(
      'data-level',
      retention >= 0.95 ? 'kept' : retention >= 0.8 ? 'partial' : 'lost',
    );
  }
  await expect(page.getByTestId('eval-cell-agent-0-1')).toHaveAttribute('data-level', 'own');

  // Side by side: the first probe's prompt, continued by each model, as the evaluation generated it.
  const first = (await readFile(PROBES, 'utf8')).split('\n')[0]!;
  await page.getByTestId('eval-prompt').fill((JSON.parse(first) as { prompt: string }).prompt);
  await page.getByTestId('eval-generate-run').click();
  for (const [m, model] of expected.models.entries())
    await expect(page.getByTestId(`eval-generated-${model.label}`).locator('pre')).toHaveText(
      expected.examples[0]!.generatedText[m]!,
      { timeout: 60_000 },
    );

  // With the chat template (jinja, in the worker under the page's policy) the prompt is a user message.
  await page.getByTestId('eval-chat').check();
  await page.getByTestId('eval-generate-run').click();
  await expect(page.getByTestId('eval-generate')).toHaveAttribute('data-status', 'done', { timeout: 60_000 });
  await expect(page.getByTestId('eval-generated').locator('li')).toHaveCount(3);

  // The table's retention colours and the panel pass axe's contrast rules in light and dark mode.
  expect(await axeViolations(page, '[data-testid="eval-panel"]')).toEqual([]);
  await workflow.shoot(evaluation.panel, 'eval-panel', testInfo);
  await page.emulateMedia({ colorScheme: 'dark' });
  expect(await axeViolations(page, '[data-testid="eval-panel"]')).toEqual([]);
  expect(browserErrors.messages).toEqual([]);
});

test('a run is cancelled mid-way; Cancel has the focus while it runs', async ({ workflow, evaluation }) => {
  test.setTimeout(180_000);
  await loadSet(workflow);
  await evaluation.giveProbes(PROBES);
  // The job waits at its first read of a model file until the test has cancelled it.
  await workflow.holdReads(0);
  await evaluation.run.click();
  await expect(evaluation.panel).toHaveAttribute('data-status', 'running');
  await expect(evaluation.cancel).toBeFocused();
  await evaluation.cancel.click();
  await workflow.openReads();
  await expect(evaluation.panel).toHaveAttribute('data-status', 'cancelled');
  await expect(evaluation.page.getByTestId('eval-cancelled')).toBeVisible();
  await expect(evaluation.result).toHaveCount(0);
  await expect(evaluation.error).toHaveCount(0);
  // Cancel went with the run: the focus is back on the Run button.
  await expect(evaluation.run).toBeFocused();
});

test('a bad probe line and a model without a tokenizer are shown by name; the studio stays usable', async ({
  workflow,
  evaluation,
  page,
}) => {
  // The demo set: the gridworld architecture, no tokenizer.
  await workflow.openDemo();
  const bad = join(tmp, 'bad.jsonl');
  await writeFile(bad, '{"prompt": "a", "completion": " b"}\n{"prompt": "c", "completion": \n');
  await evaluation.giveProbes(bad);
  await evaluation.run.click();
  await expect(evaluation.panel).toHaveAttribute('data-status', 'error');
  await expect(evaluation.error).toContainText('bad.jsonl:2: not valid JSON');

  await page.getByRole('button', { name: 'Remove bad.jsonl' }).click();
  await evaluation.giveProbes(PROBES);
  await evaluation.run.click();
  await expect(evaluation.panel).toHaveAttribute('data-status', 'error');
  await expect(evaluation.error).toContainText('tokenizer.json');
  await expect(evaluation.run).toBeEnabled();
  await expect(page.getByTestId('step-evaluate')).toHaveAttribute('data-state', 'error');
  // The rest of the studio is as it was: the demo can still be merged.
  await expect(workflow.mergeButton).toBeEnabled();
});

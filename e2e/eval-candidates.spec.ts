// Candidate merges in the Evaluate step on the tiny Qwen2 set (src/test/eval-fixtures/qwen2-set: a
// base and two agents): two candidates added in the form are scored beside the base and the agents
// exactly as `merge-studio eval --base … --candidate …` scores them, none written; then "Write this
// merge" on one gives the Merge step its recipe and writes that merge.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
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
const PROBES = join(FIXTURES, 'probes.jsonl');
const MAX_NEW_TOKENS = 4;
const CANDIDATES = ['ramplus r=0.3', 'ties density=0.7,0.3'];

let tmp = '';

test.beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'merge-studio-eval-cand-'));
});

test.afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

test('candidate merges are scored as `merge-studio eval --candidate` scores them, and one is written', async ({
  workflow,
  evaluation,
  page,
  browserErrors,
}, testInfo) => {
  test.setTimeout(300_000);
  await workflow.loadFolders(join(SET, 'base'), [join(SET, 'agent-0'), join(SET, 'agent-1')]);
  // The statistics at the default ε: RAM+ takes its λ from them (the worker's cache), not a new pass.
  await workflow.analysisOf(['agent-0', 'agent-1']);
  await evaluation.giveProbes(PROBES);
  await evaluation.maxNewTokens.fill(String(MAX_NEW_TOKENS));

  await evaluation.addCandidate('ramplus', { r: '0.3' }, CANDIDATES[0]!);
  await evaluation.addCandidate(
    'ties',
    { 'density-agent-0': '0.7', 'density-agent-1': '0.3' },
    CANDIDATES[1]!,
  );
  const form = evaluation.candidates;
  await expect(form.getByTestId('eval-cand-list').locator('li code')).toHaveText(CANDIDATES);
  // The same merge twice is refused by name.
  await form.getByTestId('eval-cand-add').click();
  await expect(form.getByTestId('eval-cand-problem')).toHaveText(
    'ties density=0.7,0.3 is among the candidates already.',
  );

  await expect(evaluation.run).toHaveText('Evaluate 3 models and 2 candidate merges');
  await evaluation.run.click();
  const studio = await evaluation.resultJson(240_000);
  // Nothing was written: no merge in the session, none in the library.
  expect(await page.evaluate(() => window.__mergeStudio!.studio().merges.length)).toBe(0);

  const out = join(tmp, 'cli.json');
  const cli = await runCli(
    [
      'eval',
      '--base',
      join(SET, 'base'),
      ...['agent-0', 'agent-1'].flatMap((m) => ['--model', join(SET, m)]),
      ...CANDIDATES.flatMap((c) => ['--candidate', c]),
      '--probes',
      PROBES,
      '--max-new-tokens',
      String(MAX_NEW_TOKENS),
      '--json',
      out,
    ],
    { timeoutMs: 240_000 },
  );
  expect(cli.code, cli.stderr).toBe(0);
  const expected = JSON.parse(await readFile(out, 'utf8')) as EvalResult;

  expect(studio.models.map((m) => m.label)).toEqual(['base', 'agent-0', 'agent-1', ...CANDIDATES]);
  // The candidates as the CLI names them, path included ("merge: <label>"); the loaded models' paths
  // differ (the studio has no file paths).
  expect(studio.models.slice(3)).toEqual(expected.models.slice(3));
  expect(studio.models.slice(3).map((m) => m.path)).toEqual(CANDIDATES.map((c) => `merge: ${c}`));
  // Every number and text, exactly.
  expect(studio.examples).toEqual(expected.examples);
  expect(studio.sets).toEqual(expected.sets);
  // The candidates are merges of their own: neither is the base nor the other.
  for (const set of expected.sets) {
    expect(new Set(set.meanNll.slice(0, 1).concat(set.meanNll.slice(3))).size).toBe(3);
    for (const [m] of CANDIDATES.entries())
      await expect(
        page.getByTestId(`eval-cell-${set.set.replace(/[^A-Za-z0-9_-]/g, '_')}-${3 + m}`),
      ).toContainText(`NLL ${set.meanNll[3 + m]!.toFixed(3)}`);
  }

  expect(await axeViolations(page, '[data-testid="eval-panel"]')).toEqual([]);
  await workflow.shoot(evaluation.panel, 'eval-candidates', testInfo);
  await page.emulateMedia({ colorScheme: 'dark' });
  expect(await axeViolations(page, '[data-testid="eval-panel"]')).toEqual([]);
  await page.emulateMedia({ colorScheme: 'light' });

  // Write this merge: the Merge step takes the candidate's recipe (output dtype: the inputs', as it
  // was scored) and writes it; the note in the Evaluate step follows that merge.
  await workflow.page.getByTestId('out-dtype').selectOption('F32');
  await page.getByTestId('eval-write-ties_density_0_7_0_3').click();
  await expect(page.getByTestId('eval-written')).toHaveAttribute('data-status', 'done', { timeout: 120_000 });
  await expect(page.getByTestId('eval-written')).toContainText('Wrote ties density=0.7,0.3 to merges/ties-');
  const merges = await page.evaluate(() => window.__mergeStudio!.studio().merges);
  expect(merges).toHaveLength(1);
  expect(merges[0]!.params).toMatchObject({ method: 'ties', density: [0.7, 0.3] });
  await expect(page.getByTestId('method-select')).toHaveValue('ties');
  await expect(page.getByTestId('param-density-agent-0')).toHaveValue('0.7');
  await expect(page.getByTestId('param-density-agent-1')).toHaveValue('0.3');
  await expect(page.getByTestId('out-dtype')).toHaveValue('');
  expect(browserErrors.messages).toEqual([]);
});

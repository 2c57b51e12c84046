// Loading several models at once: four agent folders set back to back with no wait all reach ready
// and the statistics run over all four; a folder of agent folders becomes one agent per folder; agents
// can be renamed and reordered.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeLlamaSet } from '../src/bench/llama-set.ts';
import { nodeFolder } from '../src/io/node.ts';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

const AGENTS = ['agent-0', 'agent-1', 'agent-2', 'agent-3'];
let root = '';

test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'merge-studio-loading-'));
  // Tiny and sharded: two layers of hidden 32, a few shards per model.
  await writeLlamaSet(
    { layers: 2, hidden: 32, vocab: 64, agents: AGENTS.length, seed: 9, shardBytes: 16 * 1024 },
    (name) => nodeFolder(join(root, 'set', name)),
  );
});

test.afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

test('four agent folders set back to back with no wait all reach ready and the statistics run', async ({
  workflow,
  page,
  browserErrors,
}) => {
  await workflow.openDemo();
  await workflow.removeAllAgents();
  await workflow.loadBaseFolder(join(root, 'set', 'base'));
  // No wait between the four: each answer must still reach its own card.
  const input = page.getByTestId('model-new-agent-folder-input');
  for (const agent of AGENTS) await input.setInputFiles(join(root, 'set', agent));
  for (let i = 0; i < AGENTS.length; i++)
    await expect(workflow.agentCard(i)).toHaveAttribute('data-status', 'ready');
  await expect(page.getByTestId('model-base')).toHaveAttribute('data-status', 'ready');
  const analysis = await workflow.analysisOf(AGENTS);
  expect(analysis.result?.totals.changed).toHaveLength(AGENTS.length);
  expect(analysis.result?.totals.changed.every((n) => n > 0)).toBe(true);
  expect(browserErrors.messages).toEqual([]);
});

test('a folder of agent folders becomes one agent per folder; agents can be renamed and reordered', async ({
  workflow,
  page,
}) => {
  await workflow.openDemo();
  await workflow.removeAllAgents();
  await workflow.loadBaseFolder(join(root, 'set', 'base'));
  // The whole set folder: base/ and agent-0..3/ each hold weights, so each becomes an agent.
  await page.getByTestId('model-new-agent-folder-input').setInputFiles(join(root, 'set'));
  await expect
    .poll(async () => (await workflow.studio()).models.map((m) => [m.role, m.label, m.status]))
    .toEqual([
      ['base', 'base', 'ready'],
      ['agent', 'agent-0', 'ready'],
      ['agent', 'agent-1', 'ready'],
      ['agent', 'agent-2', 'ready'],
      ['agent', 'agent-3', 'ready'],
      // The same folder name as the base gets a distinct label.
      ['agent', 'base (2)', 'ready'],
    ]);
  await workflow.analysisOf(['agent-0', 'agent-1', 'agent-2', 'agent-3', 'base (2)']);

  await page.getByTestId('model-agent-4-remove').click();
  await page.getByTestId('model-agent-0-rename').click();
  const rename = page.getByTestId('model-agent-0-rename-input');
  await expect(rename).toBeFocused();
  await rename.fill('agent-1');
  await rename.press('Enter');
  // A taken name is refused and said so.
  await expect(page.getByTestId('model-agent-0-rename-form').getByRole('alert')).toBeVisible();
  await rename.fill('planner');
  await rename.press('Enter');
  await expect(page.getByTestId('model-agent-0-label')).toHaveText('planner');

  await page.getByTestId('model-agent-0-down').click();
  await expect(page.getByTestId('model-agent-1-label')).toHaveText('planner');
  await expect(page.getByTestId('model-agent-0-label')).toHaveText('agent-1');
  const analysis = await workflow.analysisOf(['agent-1', 'planner', 'agent-2', 'agent-3']);
  expect(analysis.status).toBe('done');
});

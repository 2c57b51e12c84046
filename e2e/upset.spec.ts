// The UpSet view past 4 agents: with 6 agents each element's exact set of changing agents is counted
// by the statistics pass, and the view shows every non-empty set with the count found here directly.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { floatTensor, modelFolderFiles, rng } from '../src/test/fixtures.ts';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

const AGENTS = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'];
const SHAPE = [48, 32];
const NUMEL = SHAPE[0]! * SHAPE[1]!;

let root = '';
/** Elements per exact set of changing agents (bit t: agent t), counted as the files are made. */
const expected = new Map<number, number>();

test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'merge-studio-upset-'));
  const random = rng(606);
  const baseValues = Float32Array.from({ length: NUMEL }, () => random() - 0.5);
  const agents = AGENTS.map(() => Float32Array.from(baseValues));
  for (let i = 0; i < NUMEL; i++) {
    let mask = 0;
    // Each agent moves an element by at least 0.01 with probability 0.4, far above ε.
    agents.forEach((values, t) => {
      if (random() >= 0.4) return;
      values[i] = values[i]! + (random() < 0.5 ? -1 : 1) * (0.01 + 0.05 * random());
      mask |= 1 << t;
    });
    if (mask !== 0) expected.set(mask, (expected.get(mask) ?? 0) + 1);
  }
  const write = async (label: string, values: Float32Array): Promise<void> => {
    await mkdir(join(root, label));
    const files = modelFolderFiles([floatTensor('model.layers.0.mlp.up_proj.weight', 'F32', SHAPE, values)]);
    for (const [name, bytes] of files) await writeFile(join(root, label, name), bytes);
  };
  await write('base', baseValues);
  for (const [t, label] of AGENTS.entries()) await write(label, agents[t]!);
});

test.afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

test('with 6 agents the UpSet view shows every exact agent set with its count', async ({
  page,
  workflow,
}) => {
  await workflow.openDemo();
  await workflow.removeAllAgents();
  await workflow.loadBaseFolder(join(root, 'base'));
  for (const label of AGENTS) await workflow.addAgentFolder(join(root, label));
  await workflow.analysisOf(AGENTS);
  await expect(page.getByTestId('upset-unavailable')).toHaveCount(0);
  const shown = await page
    .getByTestId('upset-set')
    .evaluateAll((sets) =>
      sets.map((g) => [
        JSON.parse(g.getAttribute('data-agents')!) as number[],
        Number(g.getAttribute('data-count')),
      ]),
    );
  const want = [...expected].map(([mask, count]) => [
    AGENTS.map((_, t) => t).filter((t) => (mask >> t) & 1),
    count,
  ]);
  expect(shown.length).toBeGreaterThan(40);
  expect(new Map(shown.map(([agents, count]) => [JSON.stringify(agents), count]))).toEqual(
    new Map(want.map(([agents, count]) => [JSON.stringify(agents), count])),
  );
});

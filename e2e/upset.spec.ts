// The UpSet view past 4 agents: with 6 agents each element's exact set of changing agents is counted
// by the statistics pass, and the view shows every non-empty set with the count found here directly.
import { floatTensor, modelFolderFiles, rng } from '../src/test/fixtures.ts';
import { expect, test as base } from './fixtures.ts';
import { tempFolders } from './temp-folders.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

const AGENTS = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'];
const SHAPE = [48, 32];
const NUMEL = SHAPE[0]! * SHAPE[1]!;

/** Elements per exact set of changing agents (bit t: agent t), counted as the files are made. */
const expected = new Map<number, number>();

const at = tempFolders(test, 'upset', () => {
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
  const files = (values: Float32Array) =>
    modelFolderFiles([floatTensor('model.layers.0.mlp.up_proj.weight', 'F32', SHAPE, values)]);
  return {
    base: files(baseValues),
    ...Object.fromEntries(AGENTS.map((label, t) => [label, files(agents[t] ?? baseValues)])),
  };
});

test('with 6 agents the UpSet view shows every exact agent set with its count', async ({
  page,
  workflow,
}) => {
  await workflow.loadFolders(
    at('base'),
    AGENTS.map((label) => at(label)),
  );
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

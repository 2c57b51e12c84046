// Faithful recipe import: mergekit's own ties.yml (a density gradient, a weight gradient, a weight
// filter on "mlp", dtype float16) imported into the studio keeps its gradients and filter (shown as
// lists, not numbers), maps each recipe model to the loaded folder of its name, lists what it cannot
// honour, exports back with the gradients and filter, and merges to the same bytes as the CLI's
// `merge --config` of the same recipe on the same folders.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeLlamaSet } from '../src/bench/llama-set.ts';
import { nodeFolder } from '../src/io/node.ts';
import { must } from '../src/io/checked.ts';
import { parseMergekitYaml } from '../src/methods/recipe.ts';
import { runCli } from '../src/test/cli.ts';
import { axeViolations } from './axe.ts';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

const TIES_YML = 'src/cli/mergekit-examples/ties.yml';
/** The generated set's folders, named as ties.yml's models end (base, then its three models in order). */
const FOLDERS: Record<string, string> = {
  base: 'Llama-2-13B-fp16',
  'agent-0': 'orca_mini_v3_13b',
  'agent-1': 'Platypus2-13B',
  'agent-2': 'WizardMath-13B-V1.0',
};

const BASE = 'Llama-2-13B-fp16';
const ORCA = 'orca_mini_v3_13b';
const PLATYPUS = 'Platypus2-13B';
const WIZARD = 'WizardMath-13B-V1.0';

let root = '';

/** The statistics pass of these agents finished (SwiftShader on shared CPUs can take longer than expect's 15 s). */
async function settled(workflow: WorkflowPage, labels: string[]): Promise<void> {
  await expect
    .poll(
      async () => {
        const data = await workflow.studio();
        return { labels: data.analysisLabels, status: data.analysis.status };
      },
      { timeout: 90_000 },
    )
    .toEqual({ labels, status: 'done' });
}

test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'merge-studio-recipe-import-'));
  await writeLlamaSet({ layers: 4, hidden: 64, vocab: 256, agents: 3, seed: 3 }, (name) =>
    nodeFolder(join(root, must(FOLDERS[name], name))),
  );
});

test.afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

test('mergekit’s ties.yml imports with its gradients and filter, exports them back, and merges as the CLI does', async ({
  workflow,
  page,
  browserErrors,
}, testInfo) => {
  test.setTimeout(400_000);
  const yaml = await readFile(TIES_YML, 'utf8');
  // Loaded in another order than the recipe's: the recipe's models go to the folders of their names.
  await workflow.loadFolders(
    join(root, BASE),
    [WIZARD, ORCA, PLATYPUS].map((f) => join(root, f)),
  );
  await settled(workflow, [WIZARD, ORCA, PLATYPUS]);
  await page
    .getByTestId('recipe-yaml-input')
    .setInputFiles({ name: 'ties.yml', mimeType: 'text/yaml', buffer: Buffer.from(yaml) });

  const notice = page.getByTestId('recipe-restored');
  await expect(notice).toHaveAttribute('data-from', 'yaml');
  await expect(page.getByTestId('recipe-imported')).toContainText('ties.yml imported');
  // The notice stands at the top of the Merge step, above the method: in view where the recipe is.
  const [noticeBox, methodBox] = await Promise.all([
    notice.boundingBox(),
    page.getByTestId('method-select').boundingBox(),
  ]);
  expect(must(noticeBox, 'notice box').y).toBeLessThan(must(methodBox, 'method box').y);
  await expect(page.getByTestId('recipe-mapping-base')).toHaveText(
    /TheBloke\/Llama-2-13B-fp16 → Llama-2-13B-fp16 \(by name\)/,
  );
  await expect(page.getByTestId('recipe-mapping-row')).toHaveText([
    /psmathur\/orca_mini_v3_13b → orca_mini_v3_13b \(by name\)/,
    /garage-bAInd\/Platypus2-13B → Platypus2-13B \(by name\)/,
    /WizardLM\/WizardMath-13B-V1.0 → WizardMath-13B-V1.0 \(by name\)/,
  ]);
  // Every model is loaded under its name: nothing to choose again.
  await expect(notice).not.toContainText('choose those models');
  // What the studio cannot honour is listed, not dropped: int8_mask, mergekit's float16 arithmetic.
  const unhonoured = page.getByTestId('recipe-unhonoured');
  await expect(unhonoured).toContainText('int8_mask');
  await expect(unhonoured).toContainText('dtype float16');

  await expect(page.getByTestId('method-select')).toHaveValue('ties');
  // The recipe's dtype is the read precision, as merge --config reads it (step 2's "compare at").
  await expect(page.getByTestId('read-dtype')).toHaveValue('F16');
  await expect(page.getByTestId('merge-read-dtype')).toContainText('f16');
  await expect(page.getByTestId('out-dtype')).toHaveValue('F16');
  const id = (label: string): string => label.replace(/[^A-Za-z0-9_-]/g, '_');
  const orcaDensity = page.getByTestId(`param-density-${id(ORCA)}-gradient`);
  await expect(orcaDensity).toContainText('[1, 0.7, 0.1]');
  await expect(orcaDensity).toContainText('per layer, interpolated');
  await expect(page.getByTestId(`param-weights-${id(PLATYPUS)}-gradient`)).toContainText('[0, 0.3, 0.7, 1]');
  await expect(page.getByTestId(`param-weights-${id(WIZARD)}-gradient`)).toContainText(
    '“mlp”: 0.5; otherwise 0',
  );
  // The scalars stay numbers.
  await expect(page.getByTestId(`param-density-${id(PLATYPUS)}`)).toHaveValue('0.5');
  await expect(page.getByTestId(`param-density-${id(WIZARD)}`)).toHaveValue('0.33');
  await expect(page.getByTestId(`param-weights-${id(ORCA)}`)).toHaveValue('1');
  expect(await axeViolations(page, '[data-testid="merge-panel"]')).toEqual([]);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await workflow.shoot(notice, `recipe-import-notice-${scheme}`, testInfo);
    await workflow.shoot(
      page.locator('[data-testid="merge-panel"] .studio-recipe'),
      `recipe-import-params-${scheme}`,
      testInfo,
    );
  }
  await page.emulateMedia({ colorScheme: 'light' });

  // Put into the recipe's order (its gradients move with their agents), as the CLI merges it.
  await page.getByTestId('model-agent-0-down').click();
  await page.getByTestId('model-agent-1-down').click();
  await settled(workflow, [ORCA, PLATYPUS, WIZARD]);
  await expect(page.getByTestId(`param-density-${id(ORCA)}-gradient`)).toContainText('[1, 0.7, 0.1]');
  await expect(page.getByTestId(`param-weights-${id(WIZARD)}-gradient`)).toContainText('mlp');

  // The YAML the studio exports carries the gradients and the filter, per model, as the recipe had them.
  const recipe = parseMergekitYaml(yaml, 'ties.yml');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByTestId('recipe-yaml-download').click(),
  ]);
  const exported = parseMergekitYaml(
    await readFile(must(await download.path(), 'download'), 'utf8'),
    'exported.yml',
  );
  expect(exported.settings?.models).toEqual(recipe.settings?.models);
  expect(exported.params.normalize).toBe(true);

  await workflow.merge(1);
  const record = must((await workflow.studio()).merges[0], 'the merge');
  const written = (await workflow.mergedFile(record.folder, 'mergekit_config.yml')).toString();
  expect(written).toContain('filter: mlp');
  expect(parseMergekitYaml(written, 'mergekit_config.yml').settings?.models).toEqual(recipe.settings?.models);

  // The CLI's merge of the same recipe, its models the same folders.
  const paths = yaml
    .replace('TheBloke/Llama-2-13B-fp16', join(root, BASE))
    .replace('psmathur/orca_mini_v3_13b', join(root, ORCA))
    .replace('garage-bAInd/Platypus2-13B', join(root, PLATYPUS))
    .replace('WizardLM/WizardMath-13B-V1.0', join(root, WIZARD));
  const config = join(root, 'ties.yml');
  await writeFile(config, paths);
  const out = join(root, 'cli-out');
  const cli = await runCli(['merge', '--config', config, '--out', out], { timeoutMs: 120_000 });
  expect(cli.code, cli.stderr).toBe(0);
  const want = await readFile(join(out, 'model.safetensors'));
  const got = await workflow.mergedFile(record.folder, 'model.safetensors');
  expect(got.length).toBe(want.length);
  expect(got.equals(want)).toBe(true);
  expect(browserErrors.messages).toEqual([]);

  // Replacing a gradient is explicit: the number comes back, and the recipe no longer has the gradient.
  await page.getByTestId(`param-density-${id(ORCA)}-gradient-clear`).click();
  await expect(page.getByTestId(`param-density-${id(ORCA)}-gradient`)).toHaveCount(0);
  await expect(page.getByTestId(`param-density-${id(ORCA)}`)).toHaveValue('1');
  await page.getByTestId('recipe-tools').locator('details summary').click();
  const shown = parseMergekitYaml(
    must(await page.getByTestId('recipe-yaml').textContent(), 'yaml'),
    'shown.yml',
  );
  expect(shown.settings?.models[0]).toEqual({ weight: 1, density: 1 });
  expect(shown.settings?.models[1]).toEqual(recipe.settings?.models[1]);
});

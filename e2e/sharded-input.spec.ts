// Sharded input through the plain folder-upload inputs: a generated base and two agents, each split
// into model-0000i-of-0000N.safetensors shards with an index, load into the studio; the preflight,
// the statistics and a RAM merge equal what the CPU reference computes here in Node on the same
// files. Also: where showDirectoryPicker is missing, the export panel says which download size is safe.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyzeModels, mergeModels } from '../src/driver/driver.ts';
import { BRANCHES_FILE } from '../src/driver/merge-branches.ts';
import { openModel, type Model } from '../src/format/model.ts';
import { memoryFolder } from '../src/io/sink.ts';
import { memorySource } from '../src/io/source.ts';
import { createCpuEngine } from '../src/engine/cpu-engine.ts';
import { defaultParams } from '../src/methods/defaults.ts';
import { floatTensor, modelFolderFiles, rng, type FixtureTensor } from '../src/test/fixtures.ts';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';
import { at, must } from '../src/io/checked.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

const AGENTS = ['coder', 'writer'] as const;
const HIDDEN = 32;
const INTERMEDIATE = 64;
const VOCAB = 96;
const LAYERS = 2;
/** Small enough that every model needs several shards (about 40 KiB of bf16 weights each). */
const SHARD_BYTES = 12 * 1024;
const CONFIG = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  hidden_size: HIDDEN,
  intermediate_size: INTERMEDIATE,
  num_hidden_layers: LAYERS,
  num_attention_heads: 4,
  vocab_size: VOCAB,
  torch_dtype: 'bfloat16',
};

/** Tensor names and shapes as a Llama checkpoint names them. */
function layout(): { name: string; shape: number[] }[] {
  const shapes: { name: string; shape: number[] }[] = [
    { name: 'model.embed_tokens.weight', shape: [VOCAB, HIDDEN] },
  ];
  for (let l = 0; l < LAYERS; l++) {
    const p = `model.layers.${l}`;
    for (const proj of ['q_proj', 'k_proj', 'v_proj', 'o_proj'])
      shapes.push({ name: `${p}.self_attn.${proj}.weight`, shape: [HIDDEN, HIDDEN] });
    shapes.push({ name: `${p}.mlp.gate_proj.weight`, shape: [INTERMEDIATE, HIDDEN] });
    shapes.push({ name: `${p}.mlp.up_proj.weight`, shape: [INTERMEDIATE, HIDDEN] });
    shapes.push({ name: `${p}.mlp.down_proj.weight`, shape: [HIDDEN, INTERMEDIATE] });
    shapes.push({ name: `${p}.input_layernorm.weight`, shape: [HIDDEN] });
    shapes.push({ name: `${p}.post_attention_layernorm.weight`, shape: [HIDDEN] });
  }
  shapes.push({ name: 'model.norm.weight', shape: [HIDDEN] });
  shapes.push({ name: 'lm_head.weight', shape: [VOCAB, HIDDEN] });
  return shapes;
}

/** The base and agents as float values; each agent moves a random ~15% of elements by 0.01–0.06. */
function generate(): Map<string, FixtureTensor[]> {
  const random = rng(20240611);
  const baseValues = layout().map(({ name, shape }) => {
    const numel = shape.reduce((a, b) => a * b, 1);
    const norm = name.endsWith('norm.weight');
    return {
      name,
      shape,
      values: Float32Array.from({ length: numel }, () => (norm ? 1 : 0) + (random() - 0.5) * 0.2),
    };
  });
  const models = new Map<string, FixtureTensor[]>();
  models.set(
    'base',
    baseValues.map((t) => floatTensor(t.name, 'BF16', t.shape, t.values)),
  );
  for (const agent of AGENTS)
    models.set(
      agent,
      baseValues.map((t) => {
        const values = t.values.map((v) => {
          if (random() >= 0.15) return v;
          const delta = 0.01 + random() * 0.05;
          return random() < 0.5 ? v - delta : v + delta;
        });
        return floatTensor(t.name, 'BF16', t.shape, values);
      }),
    );
  return models;
}

const MODELS = new Map(
  [...generate()].map(([label, tensors]) => [
    label,
    modelFolderFiles(tensors, { shardBytes: SHARD_BYTES, config: CONFIG }),
  ]),
);

function referenceModel(label: string): Promise<Model> {
  const files = [...must(MODELS.get(label), label)].map(([name, bytes]) => ({
    name,
    source: memorySource(name, bytes),
  }));
  return openModel(label, files);
}

async function referenceInputs(): Promise<{ base: Model; agents: Model[] }> {
  return { base: await referenceModel('base'), agents: await Promise.all(AGENTS.map(referenceModel)) };
}

let root = '';

test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'merge-studio-sharded-'));
  for (const [label, files] of MODELS) {
    await mkdir(join(root, label));
    for (const [name, bytes] of files) await writeFile(join(root, label, name), bytes);
  }
});

test.afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

test('a sharded base and agents load from folders; statistics and a RAM merge equal the CPU reference', async ({
  workflow,
  page,
  browserErrors,
}) => {
  const base = must(MODELS.get('base'), 'base');
  const shards = [...base.keys()].filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f));
  expect(shards.length).toBeGreaterThan(2);
  expect(base.has('model.safetensors.index.json')).toBe(true);
  const tensorCount = layout().length;
  const parameters = layout().reduce((sum, t) => sum + t.shape.reduce((a, b) => a * b, 1), 0);

  await workflow.loadFolders(
    join(root, 'base'),
    AGENTS.map((agent) => join(root, agent)),
  );

  // (a) The preflight: every model is sharded, with the shard and tensor counts of the files written.
  for (const card of ['model-base', 'model-agent-0', 'model-agent-1']) {
    await expect(page.getByTestId(card)).toHaveAttribute('data-status', 'ready');
    await expect(workflow.modelFact(card, 'shards')).toHaveText(`${shards.length} (indexed)`);
    await expect(workflow.modelFact(card, 'tensors')).toHaveText(String(tensorCount));
    await expect(workflow.modelFact(card, 'dtypes')).toHaveText(
      `BF16 ${new Intl.NumberFormat('en-US').format(parameters)}`,
    );
  }
  expect((await workflow.studio()).models.map((m) => [m.role, m.label, m.report?.sharded])).toEqual([
    ['base', 'base', true],
    ['agent', 'coder', true],
    ['agent', 'writer', true],
  ]);
  await expect(page.getByTestId('compat-report')).toHaveAttribute('data-ok', 'true');

  // (b) The statistics, as data and as shown, equal the CPU reference on the same files.
  const reference = await referenceInputs();
  const [analysis, expected] = await Promise.all([
    workflow.analysisOf([...AGENTS]),
    analyzeModels({ ...reference, engine: createCpuEngine({ agents: AGENTS.length }), epsilon: 1e-5 }),
  ]);
  expect(expected.totals.counts[2]).toBeGreaterThan(0);
  expect(expected.totals.signConflicts).toBeGreaterThan(0);
  expect(analysis.result?.tensors).toEqual(expected.tensors);
  expect(analysis.result?.totals).toEqual(expected.totals);
  await expect(workflow.statsPanel).toHaveAttribute('data-status', 'done');
  await workflow.expectTotalsShown(expected.totals, [...AGENTS]);
  await expect(page.getByTestId('tensor-row')).toHaveCount(tensorCount);

  // (c) A RAM merge exported to OPFS equals the CPU reference merge byte for byte.
  await workflow.selectMethod('ram');
  await workflow.merge(1);
  const record = at((await workflow.studio()).merges, 0, 'merges');
  expect(record.engine).toMatch(/swiftshader/i);
  const out = memoryFolder('reference');
  await mergeModels({
    ...reference,
    engine: createCpuEngine({ agents: AGENTS.length }),
    params: defaultParams('ram', AGENTS.length),
    out,
    baseLabel: 'base',
    agentLabels: [...AGENTS],
  });
  expect(record.params).toEqual(defaultParams('ram', AGENTS.length));
  // The studio adds the branch counts of the statistics it merged with (merge-branches.ts).
  expect(record.files.map((f) => f.file).sort()).toEqual([...out.files.keys(), BRANCHES_FILE].sort());
  for (const file of ['model.safetensors', 'config.json', 'mergekit_config.yml']) {
    const bytes = await workflow.mergedFile(record.folder, file);
    expect(
      bytes.equals(Buffer.from(must(out.files.get(file), file))),
      `${file} equals the CPU reference`,
    ).toBe(true);
  }
  expect(browserErrors.messages).toEqual([]);
});

test('where showDirectoryPicker is missing, the export panel says up front which download size is safe', async ({
  workflow,
  page,
}, testInfo) => {
  await page.addInitScript(() => {
    delete (window as { showDirectoryPicker?: unknown }).showDirectoryPicker;
  });
  await workflow.openDemo();
  const notice = page.getByTestId('export-download-limit');
  await expect(notice).toBeVisible();
  await expect(notice).toHaveAttribute('role', 'note');
  await expect(notice).toContainText('up to 2 GiB download safely');
  await expect(notice).toContainText('shards of at most 1.86 GiB');

  const card = await workflow.merge(1);
  await expect(card.getByTestId('merge-1-save')).toHaveCount(0);
  // The demo's files are all small: each is offered, none is flagged.
  await expect(card.getByTestId('merged-file-download')).toHaveCount(
    await card.getByTestId('merged-file').count(),
  );
  await expect(card.getByTestId('merged-file-oversize')).toHaveCount(0);
  await workflow.shoot(workflow.exportPanel, 'studio-export-no-folder-picker', testInfo);
});

test('with showDirectoryPicker the export panel offers Save to folder and no download-size notice', async ({
  workflow,
  page,
}) => {
  await workflow.openDemo();
  const card = await workflow.merge(1);
  await expect(card.getByTestId('merge-1-save')).toBeVisible();
  await expect(page.getByTestId('export-download-limit')).toHaveCount(0);
});

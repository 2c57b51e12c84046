// Agents stored otherwise than their base, in the studio (SPEC.md "Inputs stored in other precisions",
// "LoRA / PEFT adapters as agents"): a PEFT LoRA adapter folder and an agent saved in f32 load beside
// a bf16 base; the statistics say what the read precision removed, and their JSON export equals
// `merge-studio analyze --json`; the merge's bytes equal the CLI's; "compare at" outlives a reload,
// and the recipe's dtype says it.
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { readSafetensorsHeader } from '../src/format/safetensors.ts';
import { decodeFloats, encodeFloats } from '../src/format/dtype.ts';
import { serializeSafetensors } from '../src/format/write.ts';
import { memorySource } from '../src/io/source.ts';
import { at } from '../src/io/checked.ts';
import { runCli } from '../src/test/cli.ts';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

const LORA = 'src/test/lora-fixtures';

/** A seeded generator in [0, 1) (mulberry32), so the set is the same on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The tiny Llama of the LoRA fixtures stored in bf16 (the base), and an agent saved in f32 as verl
 * saves them: nearly every element moved by a sub-ulp optimiser step of bf16, one in five by a real one.
 */
async function mixedSet(): Promise<Record<string, Map<string, Uint8Array>>> {
  const bytes = new Uint8Array(readFileSync(join(LORA, 'llama-base', 'model.safetensors')));
  const header = await readSafetensorsHeader(memorySource('llama-base', bytes));
  const next = random(35);
  const base: Parameters<typeof serializeSafetensors>[0] = [];
  const agent: Parameters<typeof serializeSafetensors>[0] = [];
  for (const t of header.tensors) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    const stored = bytes.subarray(header.dataStart + t.begin, header.dataStart + t.end);
    // Scaled up, so that a sub-ulp step of bf16 is above ε = 1e-5 for nearly every element.
    const values = decodeFloats(
      'BF16',
      encodeFloats(
        'BF16',
        Array.from(decodeFloats('F32', stored, count), (v) => 32 * v),
      ),
      count,
    );
    base.push({ name: t.name, dtype: 'BF16', shape: t.shape, data: encodeFloats('BF16', values) });
    const moved = Array.from(values, (v) => {
      const kind = next();
      const sign = next() < 0.5 ? -1 : 1;
      if (kind < 0.2) return v + sign * (0.01 + 0.04 * next()) * Math.max(Math.abs(v), 0.05);
      if (kind > 0.98 || v === 0) return v;
      // At most a fifth of bf16's ulp at v: gone once rounded to bf16, whichever side of a power of 2.
      const ulp = 2 ** (Math.floor(Math.log2(Math.abs(v))) - 7);
      return v + sign * (0.1 + 0.1 * next()) * ulp;
    });
    agent.push({ name: t.name, dtype: 'F32', shape: t.shape, data: encodeFloats('F32', moved) });
  }
  const config = JSON.parse(readFileSync(join(LORA, 'llama-base', 'config.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const configBytes = (dtype: string): Uint8Array =>
    new TextEncoder().encode(`${JSON.stringify({ ...config, dtype }, null, 2)}\n`);
  const adapterConfig = readFileSync(join(LORA, 'lora', 'adapter_config.json'), 'utf8');
  const adapterWeights = new Uint8Array(readFileSync(join(LORA, 'lora', 'adapter_model.safetensors')));
  return {
    'llama-base': new Map([
      ['config.json', configBytes('bfloat16')],
      ['model.safetensors', serializeSafetensors(base)],
    ]),
    'agent-f32': new Map([
      ['config.json', configBytes('float32')],
      ['model.safetensors', serializeSafetensors(agent)],
    ]),
    lora: new Map([
      ['adapter_config.json', new TextEncoder().encode(adapterConfig)],
      ['adapter_model.safetensors', adapterWeights],
    ]),
    // The same adapter as Unsloth names one trained on a 4-bit copy of the base.
    'lora-4bit': new Map([
      [
        'adapter_config.json',
        new TextEncoder().encode(adapterConfig.replace('"tiny/llama-base"', '"unsloth/llama-base-bnb-4bit"')),
      ],
      ['adapter_model.safetensors', adapterWeights],
    ]),
  };
}

let root = '';
const folder = (name: string): string => join(root, name);
test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'merge-studio-agents-precision-'));
  for (const [name, files] of Object.entries(await mixedSet())) {
    await mkdir(folder(name));
    for (const [file, bytes] of files) await writeFile(join(folder(name), file), bytes);
  }
});
test.afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

/** `merge-studio analyze --json` of the set, paths cut to their folder names as the studio names them. */
async function cliStats(out: string, extra: string[] = []): Promise<unknown> {
  const cli = await runCli(
    [
      'analyze',
      '--base',
      folder('llama-base'),
      '--model',
      folder('agent-f32'),
      '--model',
      folder('lora'),
      ...extra,
      '--json',
      out,
    ],
    { timeoutMs: 120_000 },
  );
  expect(cli.code, cli.stderr).toBe(0);
  const written = JSON.parse(await readFile(out, 'utf8')) as { models: { path: string }[] };
  written.models = written.models.map((m) => ({ ...m, path: basename(m.path) }));
  return written;
}

async function studioStats(workflow: WorkflowPage): Promise<unknown> {
  const [download] = await Promise.all([
    workflow.page.waitForEvent('download'),
    workflow.page.getByTestId('export-stats-json').click(),
  ]);
  return JSON.parse(await readFile(await download.path(), 'utf8')) as unknown;
}

test('a LoRA adapter and an f32 agent beside a bf16 base: both precisions, the CLI’s statistics and merge', async ({
  workflow,
  page,
}, testInfo) => {
  test.setTimeout(240_000);
  await workflow.loadFolders(folder('llama-base'), [folder('agent-f32'), folder('lora')]);
  await workflow.statsDrawn();

  // The adapter's card says what it is and that it was trained on this base.
  const lora = page.getByTestId('model-agent-1-lora');
  for (const fact of ['LoRA adapter', 'rank 4', 'alpha 8', 'targets v_proj, q_proj, down_proj'])
    await expect(lora).toContainText(fact);
  await expect(page.getByTestId('model-agent-1-lora-base')).toContainText('Trained on tiny/llama-base');

  // The default compares at the base's dtype; the lines say what that removed, as analyze says it.
  await expect(page.getByTestId('read-dtype')).toHaveValue('');
  await expect(page.getByTestId('read-dtype').locator('option').first()).toHaveText(
    'Default: the base’s dtype (bf16)',
  );
  await expect(page.getByTestId('read-dtype-help')).toContainText('agent-f32 f32');
  const lines = page.getByTestId('stats-precision-line');
  await expect(lines.first()).toContainText(
    /^agent-f32: 9\d\.\d% of elements differ at stored precision, \d+\.\d% at bf16\.$/,
  );
  await expect(lines.filter({ hasText: 'lora is a LoRA adapter' })).toHaveCount(1);
  // The recipe's dtype reads the set as the default does.
  await page.getByText('mergekit YAML of this recipe').click();
  await expect(page.getByTestId('recipe-yaml')).toContainText('dtype: bfloat16');
  const studioDefault = await studioStats(workflow);
  expect(studioDefault).toHaveProperty('precision.roundedTensors');
  expect(studioDefault).toEqual(await cliStats(testInfo.outputPath('default.json')));

  // The studio's merge equals the CLI's, byte for byte (both on WebGPU: the same kernels).
  await page.getByTestId('method-select').selectOption('ties');
  await workflow.merge(1);
  const record = at((await workflow.studio()).merges, 0, 'merges');
  const out = testInfo.outputPath('cli-merge');
  const cli = await runCli(
    [
      'merge',
      '--base',
      folder('llama-base'),
      '--model',
      folder('agent-f32'),
      '--model',
      folder('lora'),
      '--method',
      'ties',
      '--out',
      out,
    ],
    { timeoutMs: 120_000 },
  );
  expect(cli.code, cli.stderr).toBe(0);
  const weights = await workflow.mergedFile(record.folder, 'model.safetensors');
  expect(weights.equals(await readFile(join(out, 'model.safetensors')))).toBe(true);
  // Its recipe's dtype reads the set as the default did; the card says the inputs were rounded.
  expect((await workflow.mergedFile(record.folder, 'mergekit_config.yml')).toString()).toContain(
    'dtype: bfloat16',
  );
  expect((await workflow.mergedFile(record.folder, 'README.md')).toString()).toMatch(
    /Inputs read at the base’s dtype \(values rounded in \d+ tensors\)/,
  );

  // At f32 the f32 agent's τ is dense: the count at bf16 beside it, and the hint, as analyze gives them.
  await page.getByTestId('read-dtype').selectOption('F32');
  await workflow.statsDrawn();
  await expect(lines.first()).toContainText(
    /^agent-f32: 9\d\.\d% of elements differ at f32, \d+\.\d% at bf16\.$/,
  );
  await expect(
    lines.filter({ hasText: 'compare at bf16 (--read-dtype bf16) or raise --epsilon' }),
  ).toHaveCount(1);
  await expect(page.getByTestId('merge-read-dtype')).toHaveText('f32 (step 2)');
  await expect(page.getByTestId('recipe-yaml')).toContainText('dtype: float32');
  const studioF32 = await studioStats(workflow);
  expect(studioF32).toHaveProperty('precision.changedBf16');
  expect(studioF32).toEqual(await cliStats(testInfo.outputPath('f32.json'), ['--read-dtype', 'f32']));
  // What a user sees at 1280×800, in both colour schemes: the models' cards and the statistics' head.
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    for (const [id, name] of [
      ['model-agent-1', 'models'],
      ['stats-panel', 'stats'],
    ] as const) {
      await page.getByTestId(id).evaluate((e) => e.scrollIntoView({ block: 'start' }));
      await page.screenshot({ path: testInfo.outputPath(`agents-precision-${name}-${colorScheme}.png`) });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });

  // The choice is part of the session: it outlives a reload.
  await page.reload();
  await expect(page.getByTestId('read-dtype')).toHaveValue('F32');
});

test('an adapter trained on a 4-bit copy of the base loads, the card says so', async ({ workflow, page }) => {
  await workflow.loadFolders(folder('llama-base'), [folder('lora-4bit')]);
  await workflow.statsDrawn();
  await expect(page.getByTestId('model-agent-0')).toHaveAttribute('data-status', 'ready');
  await expect(page.getByTestId('model-agent-0-lora-base')).toContainText(
    'was trained on unsloth/llama-base-bnb-4bit, a quantised copy of llama-base',
  );
});

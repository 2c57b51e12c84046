// PEFT LoRA adapters as agents on the command line (CPU engine): --model ADAPTER_DIR merges as PEFT's
// merge_and_unload(); mergekit's `model: BASE+ADAPTER` in a recipe equals the flags; one weights file
// of a folder holding several checkpoints is an agent too; the base named by a 4-bit copy is a note;
// adapters this cannot merge are refused by name.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openModel } from '../format/model.ts';
import { nodeModelFiles } from '../io/node.ts';
import { runCli } from '../test/cli.ts';
import { fixtureModel, fixturePlan, LORA_FIXTURES, outside, peftBound, tensorValues } from '../test/lora.ts';

let dir: string;
const fixture = (name: string) => join(LORA_FIXTURES, name);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-lora-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function mergeCli(out: string, ...args: string[]): Promise<string> {
  const result = await runCli(['merge', '--cpu', '--out', join(dir, out), ...args]);
  expect(result.stderr).toMatch(/Merged \d+ tensors/);
  expect(result.code).toBe(0);
  return result.stderr;
}

const weightsOf = (out: string) => readFile(join(dir, out, 'model.safetensors'));

describe('merge-studio with LoRA adapters', () => {
  it('merges one adapter with task arithmetic as PEFT’s merge_and_unload()', async () => {
    await mergeCli(
      'dora',
      ...['--base', fixture('llama-base'), '--model', fixture('dora')],
      ...['--method', 'task_arithmetic', '--weight', '1', '--lambda', '1', '--dtype', 'f32'],
    );
    const merged = await openModel('out', await nodeModelFiles(join(dir, 'dora')));
    const peft = await fixtureModel('dora.merged');
    const base = await fixtureModel('llama-base');
    const { plan, adapter } = await fixturePlan('dora', base);
    for (const t of peft.tensors.values()) {
      const want = await tensorValues(peft, t.name);
      const bound = await peftBound(plan, adapter, t.name, want, await tensorValues(base, t.name));
      expect(outside(t.name, await tensorValues(merged, t.name), want, bound)).toEqual([]);
    }
  });

  it('reads mergekit’s model: BASE+ADAPTER as the adapter over that base', async () => {
    const recipe = join(dir, 'ties.yml');
    const adapters = ['lora', 'rslora-patterns', 'embedding'];
    await writeFile(
      recipe,
      [
        'merge_method: ties',
        `base_model: ${fixture('llama-base')}`,
        'models:',
        ...adapters.flatMap((a) => [
          `  - model: ${fixture('llama-base')}+${fixture(a)}`,
          '    parameters: {weight: 1.0, density: 0.5}',
        ]),
        'dtype: float32',
        '',
      ].join('\n'),
    );
    const run = await runCli(['merge', '--cpu', '--config', recipe, '--out', join(dir, 'recipe')]);
    expect(run.code).toBe(0);
    await mergeCli(
      'flags',
      ...['--base', fixture('llama-base'), ...adapters.flatMap((a) => ['--model', fixture(a)])],
      ...['--method', 'ties', '--density', '0.5'],
    );
    expect(await weightsOf('recipe')).toEqual(await weightsOf('flags'));
    // The written recipe runs again as it is: both sides of BASE+ADAPTER absolute.
    const written = await readFile(join(dir, 'recipe', 'mergekit_config.yml'), 'utf8');
    expect(written).toContain(`model: ${fixture('llama-base')}+${fixture('lora')}`);
  });

  it('takes one weights file of a folder of checkpoints, beside its adapter_config.json', async () => {
    const folder = join(dir, 'checkpoints');
    await cp(fixture('lora'), folder, { recursive: true });
    await cp(
      join(folder, 'adapter_model.safetensors'),
      join(folder, 'checkpoint-2.adapter_model.safetensors'),
    );
    const folderRun = await runCli([
      'analyze',
      '--cpu',
      '--base',
      fixture('llama-base'),
      '--model',
      folder,
      '--json',
      join(dir, 'x.json'),
    ]);
    expect(folderRun.code).toBe(1);
    expect(folderRun.stderr).toMatch(/holds 2 \.safetensors files/);
    await mergeCli(
      'one-file',
      ...['--base', fixture('llama-base'), '--model', join(folder, 'checkpoint-2.adapter_model.safetensors')],
      ...['--method', 'task_arithmetic'],
    );
    await mergeCli(
      'folder',
      ...['--base', fixture('llama-base'), '--model', fixture('lora'), '--method', 'task_arithmetic'],
    );
    expect(await weightsOf('one-file')).toEqual(await weightsOf('folder'));
  });

  it('notes an adapter trained on a 4-bit copy of the base, and merges it', async () => {
    const folder = join(dir, 'unsloth');
    await cp(fixture('lora'), folder, { recursive: true });
    const config = JSON.parse(await readFile(join(folder, 'adapter_config.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    config.base_model_name_or_path = 'unsloth/llama-base-bnb-4bit';
    await writeFile(join(folder, 'adapter_config.json'), JSON.stringify(config));
    const stderr = await mergeCli(
      'unsloth-out',
      ...['--base', fixture('llama-base'), '--model', folder, '--method', 'task_arithmetic'],
    );
    expect(stderr).toContain(
      `Note: ${folder} was trained on unsloth/llama-base-bnb-4bit, a quantised copy of llama-base: its LoRA is applied to`,
    );
  });

  it('writes a task-arithmetic merge of LoRA agents as one adapter with --adapter, and refuses TIES', async () => {
    const agents = ['lora', 'rslora-patterns'].flatMap((a) => ['--model', fixture(a)]);
    const run = await runCli([
      ...['merge', '--cpu', '--base', fixture('llama-base'), ...agents, '--method', 'task_arithmetic'],
      ...['--adapter', '--out', join(dir, 'as-adapter')],
    ]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('Wrote the task_arithmetic merge of 2 LoRA adapters as one adapter');
    const written = await nodeModelFiles(join(dir, 'as-adapter'));
    expect(written.map((f) => f.name).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const ties = await runCli([
      ...['merge', '--cpu', '--base', fixture('llama-base'), ...agents, '--method', 'ties'],
      ...['--adapter', '--out', join(dir, 'ties-adapter')],
    ]);
    expect(ties.code).toBe(1);
    expect(ties.stderr).toContain('ties cannot be written as a LoRA adapter: task_arithmetic and linear');
  });

  it('refuses another adapter type by name', async () => {
    const finegates = join(dir, 'finegates');
    await cp(fixture('lora'), finegates, { recursive: true });
    await writeFile(join(finegates, 'adapter_config.json'), JSON.stringify({ peft_type: 'FINEGATES', r: 8 }));
    const run = await runCli([
      'analyze',
      '--cpu',
      '--base',
      fixture('llama-base'),
      '--model',
      finegates,
      '--json',
      join(dir, 'y.json'),
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'finegates/adapter_config.json: is a PEFT FINEGATES adapter: only LoRA adapters',
    );
  });
});

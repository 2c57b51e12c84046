// mergekit's own example recipes (src/cli/mergekit-examples/) through `merge-studio merge --config`
// with no edit but the model names, on a tiny generated Llama-shaped set: each runs, means what it
// means to mergekit, and leaves a mergekit_config.yml that names its inputs by full path.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writeLlamaSet } from '../bench/llama-set.ts';
import { decodeFloats } from '../format/dtype.ts';
import { nodeFolder } from '../io/node.ts';
import { at, must } from '../io/checked.ts';
import { roundBf16 } from '../test/parity/mergekit-reference.ts';
import { runCli } from '../test/cli.ts';
import { loadModel } from './args.ts';

let dir: string;

/** The Hub names of the examples, each mapped to a model of the generated set. */
const NAMES: Record<string, string> = {
  'TheBloke/Llama-2-13B-fp16': 'base',
  'mistralai/Mistral-7B-v0.1': 'base',
  'Qwen/Qwen2.5-7B-Instruct': 'base',
  'psmathur/orca_mini_v3_13b': 'agent-0',
  'BioMistral/BioMistral-7B': 'agent-0',
  'agents/coding': 'agent-0',
  'garage-bAInd/Platypus2-13B': 'agent-1',
  'mistralai/Mistral-7B-Instruct-v0.2': 'agent-1',
  'teknium/OpenHermes-2.5-Mistral-7B': 'agent-1',
  'agents/tool': 'agent-1',
  'WizardLM/WizardMath-13B-V1.0': 'agent-2',
  'WizardLM/WizardLM-13B-V1.2': 'agent-2',
  'agents/memory': 'agent-2',
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-recipes-'));
  await writeLlamaSet(
    { layers: 3, hidden: 64, intermediate: 128, vocab: 64, agents: 3, seed: 5, shardBytes: 100_000 },
    (name) => nodeFolder(join(dir, name)),
  );
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function runExample(example: string, out: string) {
  let text = await readFile(join(import.meta.dirname, 'mergekit-examples', example), 'utf8');
  for (const [name, local] of Object.entries(NAMES)) text = text.replaceAll(name, join(dir, local));
  const recipe = join(dir, example);
  await writeFile(recipe, text);
  return runCli(['merge', '--config', recipe, '--cpu', '--out', out]);
}

async function tensor(path: string, name: string) {
  const model = await loadModel(path);
  const t = must(model.tensors.get(name), name);
  const raw = await model.source(t.file).read(t.offset, t.end - t.begin);
  return {
    dtype: t.dtype,
    values: decodeFloats(
      t.dtype as 'BF16',
      raw,
      t.shape.reduce((a, b) => a * b, 1),
    ),
  };
}

interface Exported {
  merge_method: string;
  base_model?: string;
  models: { model: string; parameters?: Record<string, unknown> }[];
  parameters: Record<string, unknown>;
}

const exported = async (out: string) =>
  parse(await readFile(join(out, 'mergekit_config.yml'), 'utf8')) as Exported;

describe('mergekit example recipes run through merge --config with no edit', { timeout: 60_000 }, () => {
  it('ties.yml: gradients and a filter, int8_mask and dtype float16 accepted with notes', async () => {
    const out = join(dir, 'out-ties');
    const result = await runExample('ties.yml', out);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/Note: int8_mask/);
    expect(result.stderr).toMatch(/Note: dtype float16: mergekit computes every step in float16/);
    expect((await tensor(out, 'model.layers.1.mlp.up_proj.weight')).dtype).toBe('F16');
    const card = await readFile(join(out, 'README.md'), 'utf8');
    expect(card).toContain('## Parameters per tensor');
    // Layer 1 of 3 is t = 0.5: densities 0.7 / 0.5 / 0.33, weights 1 / 0.5 / 0.5 for an mlp tensor.
    expect(card).toMatch(/\| 1, 0\.5, 0\.5 \| 0\.7, 0\.5, 0\.33 \| .*model\.layers\.1\.mlp/);
    expect(card).toContain('Tie rule: TIES keeps');
    const yaml = await exported(out);
    expect(yaml.base_model).toBe(join(dir, 'base'));
    expect(at(yaml.models, 1).parameters).toEqual({ weight: [0, 0.3, 0.7, 1], density: 0.5 });
  });

  it('bio-merge.yml: ties with normalize false', async () => {
    const out = join(dir, 'out-bio');
    const result = await runExample('bio-merge.yml', out);
    expect(result.code, result.stderr).toBe(0);
    expect((await exported(out)).parameters).toEqual({ lambda: 1, normalize: false });
  });

  it('linear.yml: no base_model, exported again in mergekit’s linear form', async () => {
    const out = join(dir, 'out-linear');
    const result = await runExample('linear.yml', out);
    expect(result.code, result.stderr).toBe(0);
    const yaml = await exported(out);
    expect(yaml.base_model).toBeUndefined();
    expect(yaml.models.map((m) => [m.model, m.parameters?.weight])).toEqual([
      [join(dir, 'agent-0'), 1],
      [join(dir, 'agent-2'), 0.3],
      [join(dir, 'agent-1'), 0.5],
    ]);
  });

  it('dare_ties: base listed among the models, mergekit’s defaults (normalize false, L1 rescale)', async () => {
    const out = join(dir, 'out-dare');
    const result = await runExample('dare_ties.yml', out);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('base_model is also listed under models');
    const yaml = await exported(out);
    expect(yaml.models).toHaveLength(3);
    expect(yaml.parameters).toEqual({ lambda: 1, normalize: false, rescale: true });
    const card = await readFile(join(out, 'README.md'), 'utf8');
    expect(card).toMatch(/DARE rescale rule: l1/);
  });

  it('ram.yml and ramplus_tl.yml', async () => {
    for (const example of ['ram.yml', 'ramplus_tl.yml']) {
      const out = join(dir, `out-${example}`);
      const result = await runExample(example, out);
      expect(result.code, result.stderr).toBe(0);
      expect((await tensor(out, 'lm_head.weight')).dtype).toBe('BF16');
      expect((await exported(out)).merge_method).toBe(example.replace('.yml', ''));
    }
  });

  it('multimerge.yml: the named stage is written beside --out and feeds the final merge', async () => {
    const out = join(dir, 'out-multi');
    const result = await runExample('multimerge.yml', out);
    expect(result.code, result.stderr).toBe(0);
    const stage = `${out}.stages/first-merge`;
    expect(result.stderr).toContain(`Stage 1/2 first-merge: linear → ${stage}`);
    expect(await readdir(stage)).toContain('mergekit_config.yml');
    // first-merge: linear of base and agent-0, global weight 0.5 each, normalised: their mean.
    const name = 'model.layers.2.self_attn.q_proj.weight';
    const [base, agent, merged] = await Promise.all([
      tensor(join(dir, 'base'), name),
      tensor(join(dir, 'agent-0'), name),
      tensor(stage, name),
    ]);
    merged.values.forEach((x, i) =>
      expect(x).toBe(roundBf16((at(base.values, i) + at(agent.values, i)) / 2)),
    );
    const final = await exported(out);
    expect(at(final.models, 0).model).toBe(stage);
    expect(final.merge_method).toBe('dare_ties');
  });

  it('refuses a stage that uses a later one, before any merge', async () => {
    const recipe = join(dir, 'order.yml');
    const stage = (name: string, model: string) =>
      `name: ${name}\nmerge_method: linear\nmodels:\n  - model: ${model}\n    parameters:\n      weight: 1\n`;
    await writeFile(recipe, `${stage('one', 'two')}---\n${stage('two', join(dir, 'agent-0'))}`);
    const out = join(dir, 'out-order');
    const result = await runCli(['merge', '--config', recipe, '--cpu', '--out', out]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('stage 1 uses "two", which is stage 2');
    expect(await readdir(`${out}.stages`).catch(() => [])).toEqual([]);
  });

  it('--rescale picks DARE’s rule on the command line, and the card and recipe record it', async () => {
    const out = join(dir, 'out-flag');
    const models = ['agent-0', 'agent-1'].flatMap((m) => ['--model', join(dir, m)]);
    const args = ['merge', '--base', join(dir, 'base'), ...models, '--method', 'dare_linear', '--cpu'];
    const result = await runCli([...args, '--density', '0.5', '--rescale', 'l1', '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(join(out, 'README.md'), 'utf8')).toMatch(/DARE rescale rule: l1/);
    expect((await exported(out)).parameters.rescale).toBe(true);
    const bad = await runCli([...args, '--rescale', 'l2', '--out', join(dir, 'out-flag-bad')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--rescale must be density, l1 or none, not l2');
  });

  it('a range error names the recipe, the model and the field, with no usage text', async () => {
    const recipe = join(dir, 'bad.yml');
    await writeFile(
      recipe,
      `merge_method: ties\nbase_model: ${join(dir, 'base')}\nmodels:\n  - model: ${join(dir, 'agent-0')}\n    parameters:\n      weight: 1\n      density: 0\n`,
    );
    const result = await runCli(['merge', '--config', recipe, '--cpu', '--out', join(dir, 'out-bad')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `${recipe}: models[0] (${join(dir, 'agent-0')}) density: 0 is outside (0, 1]`,
    );
    expect(result.stderr).not.toContain('merge-studio inspect PATH');
  });
});

// --read-dtype and a recipe's dtype on the command line (CPU engine): f32 agents over a bf16 base
// merge as the same agents stored in bf16 by default, as the set stored in f32 with `stored`, and a
// recipe's `dtype` reads them at its precision; analyze --json has each agent's changed count at
// stored precision and at D; a bad value is a usage error.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { runCli } from '../test/cli.ts';
import { floatTensor, rng, writeModelFolder } from '../test/fixtures.ts';

let dir: string;
const NAME = 'model.layers.0.mlp.up_proj.weight';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-precision-'));
  const random = rng(3);
  const base = Array.from({ length: 64 }, () => random() * 2 - 1).map((v) => Math.fround(v));
  const write = (name: string, dtype: FloatDtype, values: number[]) =>
    writeModelFolder(join(dir, name), [floatTensor(NAME, dtype, [8, 8], values)], {
      config: { model_type: 'toy' },
    });
  const b = [...decodeFloats('BF16', encodeFloats('BF16', base), base.length)];
  const agents = [0, 1].map(() =>
    b.map((v, i) => (i % 3 === 0 ? v : Math.fround(v + (random() - 0.5) * (i % 2 ? 1e-4 : 0.05)))),
  );
  await write('base', 'BF16', b);
  await write('base-f32', 'F32', b);
  for (const [t, values] of agents.entries()) {
    await write(`agent${t}`, 'F32', values);
    await write(`agent${t}-bf16`, 'BF16', values);
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const weights = async (out: string): Promise<Buffer> => readFile(join(dir, out, 'model.safetensors'));

async function merge(out: string, base: string, agents: string[], ...flags: string[]): Promise<Buffer> {
  const result = await runCli([
    'merge',
    '--cpu',
    '--base',
    join(dir, base),
    ...agents.flatMap((a) => ['--model', join(dir, a)]),
    '--method',
    'ties',
    '--out',
    join(dir, out),
    ...flags,
  ]);
  expect(result.stderr).toMatch(/Merged 1 tensors/);
  expect(result.code).toBe(0);
  return weights(out);
}

describe('merge-studio and read precisions', () => {
  it('merges f32 agents over a bf16 base at bf16 by default, at f32 with --read-dtype stored', async () => {
    expect(await merge('default', 'base', ['agent0', 'agent1'])).toEqual(
      await merge('rounded', 'base', ['agent0-bf16', 'agent1-bf16']),
    );
    expect(
      await merge('stored', 'base', ['agent0', 'agent1'], '--read-dtype', 'stored', '--dtype', 'f32'),
    ).toEqual(await merge('wide', 'base-f32', ['agent0', 'agent1'], '--dtype', 'f32'));
  });

  it('reads at a recipe’s dtype', async () => {
    const recipe = join(dir, 'recipe.yml');
    await writeFile(
      recipe,
      [
        'merge_method: ties',
        `base_model: ${join(dir, 'base-f32')}`,
        'models:',
        ...['agent0', 'agent1'].flatMap((a) => [
          `  - model: ${join(dir, a)}`,
          '    parameters: {weight: 1.0, density: 0.5}',
        ]),
        'dtype: bfloat16',
        'out_dtype: float32',
        '',
      ].join('\n'),
    );
    const run = await runCli(['merge', '--cpu', '--config', recipe, '--out', join(dir, 'recipe-out')]);
    expect(run.code).toBe(0);
    const flags = ['--read-dtype', 'bf16', '--dtype', 'f32', '--density', '0.5'];
    expect(await weights('recipe-out')).toEqual(
      await merge('flag', 'base-f32', ['agent0', 'agent1'], ...flags),
    );
  });

  it('writes the read precision as its recipe’s dtype, which reads back as the same merge', async () => {
    for (const [out, flags, dtype] of [
      ['written-default', [], 'dtype: bfloat16'],
      ['written-stored', ['--read-dtype', 'stored', '--dtype', 'f32'], 'dtype: float32'],
    ] as const) {
      const first = await merge(out, 'base', ['agent0', 'agent1'], ...flags);
      const recipe = join(dir, out, 'mergekit_config.yml');
      expect(await readFile(recipe, 'utf8')).toContain(`\n${dtype}\n`);
      const run = await runCli(['merge', '--cpu', '--config', recipe, '--out', join(dir, `${out}-again`)]);
      expect(run.code, run.stderr).toBe(0);
      expect(await weights(`${out}-again`)).toEqual(first);
    }
  });

  it('analyze --json has each agent’s changed count at stored precision and at D', async () => {
    const json = join(dir, 'stats.json');
    const run = await runCli([
      'analyze',
      '--cpu',
      '--base',
      join(dir, 'base'),
      '--model',
      join(dir, 'agent0'),
      '--model',
      join(dir, 'agent1'),
      '--json',
      json,
    ]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/agent0: \d+\.\d% of elements differ at stored precision, \d+\.\d% at bf16\./);
    const stats = JSON.parse(await readFile(json, 'utf8')) as {
      readDtype: string;
      precision: { roundedTensors: number };
      models: { changed: number; changedStored: number }[];
    };
    expect(stats.readDtype).toBe('default');
    expect(stats.precision.roundedTensors).toBe(1);
    for (const m of stats.models) expect(m.changedStored).toBeGreaterThan(m.changed);
  });

  it('refuses a read precision it does not know', async () => {
    const run = await runCli([
      'analyze',
      '--base',
      join(dir, 'base'),
      '--model',
      join(dir, 'agent0'),
      '--json',
      join(dir, 'x.json'),
      '--read-dtype',
      'f8',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--read-dtype must be bf16, f16, f32 or stored, not f8');
  });
});

// The command line end to end on the CPU reference: inspect, analyze and merge on real files.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeFloats } from '../format/dtype.ts';
import { readSafetensorsHeader } from '../format/safetensors.ts';
import { nodeFileSource } from '../io/node.ts';
import { at } from '../io/checked.ts';
import { runCli } from '../test/cli.ts';
import { evaluate, modelDemoTensors } from '../demo/arena.ts';
import { loadModel } from './args.ts';
import { floatTensor, rawTensor, WORKED_EXAMPLE, writeModelFolder } from '../test/fixtures.ts';
import { oracleBranches } from '../test/branch-oracle.ts';
import { bandTaus, type TensorValues } from '../methods/reference.ts';
import { BRANCHES_FILE, parseBranches } from '../driver/merge-branches.ts';

let dir: string;
const agentNames = ['coding', 'tool', 'memory'] as const;

async function readTensor(file: string, name: string): Promise<Float64Array> {
  const source = await nodeFileSource(file);
  try {
    const header = await readSafetensorsHeader(source);
    const info = header.tensors.find((t) => t.name === name);
    if (!info) throw new Error(`${name} not in ${file}`);
    const bytes = await source.read(header.dataStart + info.begin, info.end - info.begin);
    const count = info.shape.reduce((a, b) => a * b, 1);
    return decodeFloats(info.dtype as 'F32', bytes, count);
  } finally {
    await source.close();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-cli-'));
  const steps = rawTensor('steps', 'I64', [1], new Uint8Array([7, 0, 0, 0, 0, 0, 0, 0]));
  const config = { model_type: 'toy', torch_dtype: 'float32', hidden_size: 3 };
  await writeModelFolder(join(dir, 'base'), [floatTensor('w', 'F32', [3, 3], WORKED_EXAMPLE.base), steps], {
    config,
    extraFiles: { 'tokenizer.json': '{"version":"1.0"}' },
  });
  for (const name of agentNames)
    await writeModelFolder(join(dir, name), [
      floatTensor('w', 'F32', [3, 3], WORKED_EXAMPLE.agents[name]),
      steps,
    ]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const models = () => agentNames.flatMap((name) => ['--model', join(dir, name)]);

describe('merge-studio inspect', () => {
  it('lists the tensors of a real checkpoint written by another tool, as JSON', async () => {
    const file = '../shared/checkpoints/sb3-rl-zoo-policies/cartpole-v1_ppo.safetensors';
    const result = await runCli(['inspect', file, '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as {
      tensors: { bytes: number; file: string }[];
      totalBytes: number;
    };
    expect(report.tensors.length).toBeGreaterThan(0);
    expect(report.totalBytes).toBe(report.tensors.reduce((sum, t) => sum + t.bytes, 0));
  });

  it('fails with the reader error naming the file on a truncated checkpoint', async () => {
    const good = await readFile(join(dir, 'base', 'model.safetensors'));
    const broken = join(dir, 'truncated.safetensors');
    await writeFile(broken, good.subarray(0, good.length - 3));
    const result = await runCli(['inspect', broken]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('truncated.safetensors');
    expect(result.stderr.toLowerCase()).toContain('truncated');
  });
});

describe('merge-studio analyze --cpu', () => {
  it('writes the statistics JSON of the worked example, totals equal to the sums over tensors', async () => {
    const out = join(dir, 'analyze.json');
    const result = await runCli([
      'analyze',
      '--base',
      join(dir, 'base'),
      ...models(),
      '--cpu',
      '--json',
      out,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const json = JSON.parse(await readFile(out, 'utf8')) as {
      epsilon: number;
      models: {
        path: string;
        changed: number;
        unique: number;
        shared: number;
        overlap: number[];
        rho: number;
        lambda: number;
      }[];
      tensors: {
        name: string;
        dtype: string;
        numel: number;
        counts: number[];
        changed: number[];
        unique: number[];
        signConflicts: number;
      }[];
    };
    expect(json.epsilon).toBe(1e-5);
    expect(json.tensors).toEqual([
      {
        name: 'w',
        dtype: 'F32',
        numel: 9,
        counts: [3, 3, 0, 3],
        changed: [4, 4, 4],
        unique: [1, 1, 1],
        signConflicts: 0,
        nonFinite: 0,
        nonFiniteModels: [0, 0, 0, 0],
      },
    ]);
    json.models.forEach((model, t) => {
      expect(model.path).toBe(join(dir, at(agentNames, t)));
      expect(model.changed).toBe(json.tensors.reduce((sum, x) => sum + at(x.changed, t), 0));
      expect(model.lambda).toBeCloseTo(1.2, 12);
    });
  });
});

describe('merge-studio inspect (sharded)', () => {
  it('reads a sharded folder through its index', async () => {
    const tensors = Array.from({ length: 6 }, (_, i) =>
      floatTensor(
        `layers.${i}.weight`,
        'BF16',
        [8, 8],
        Array.from({ length: 64 }, (_, j) => j - i),
      ),
    );
    await writeModelFolder(join(dir, 'sharded'), tensors, { shardBytes: 300 });
    const result = await runCli(['inspect', join(dir, 'sharded'), '--json']);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as {
      sharded: boolean;
      files: { file: string }[];
      tensors: { file: string }[];
      totalBytes: number;
    };
    expect(report.sharded).toBe(true);
    expect(report.files.length).toBeGreaterThan(1);
    expect(new Set(report.tensors.map((t) => t.file)).size).toBe(report.files.length);
    expect(report.totalBytes).toBe(6 * 64 * 2);
  });
});

describe('merge-studio merge --cpu', () => {
  it('reproduces the SPEC worked example with RAM and RAM+ and writes a complete folder', async () => {
    for (const [method, want] of [
      ['ram', WORKED_EXAMPLE.ram],
      ['ramplus', WORKED_EXAMPLE.ramplus],
    ] as const) {
      const out = join(dir, `out-${method}`);
      const stats = join(dir, `stats-${method}.json`);
      const result = await runCli([
        'merge',
        '--base',
        join(dir, 'base'),
        ...models(),
        '--method',
        method,
        '--cpu',
        '--out',
        out,
        '--stats',
        stats,
      ]);
      expect(result.stderr).toContain('Merged 1 tensors (1 copied)');
      expect(result.code).toBe(0);
      const merged = await readTensor(join(out, 'model.safetensors'), 'w');
      want.forEach((value, i) => expect(merged[i]).toBeCloseTo(value, 6));
      const files = (await readdir(out)).sort();
      expect(files).toEqual([
        'README.md',
        'config.json',
        // RAM+ merges with statistics, whose branch counts are kept; RAM here had none.
        ...(method === 'ramplus' ? ['merge_branches.json'] : []),
        'mergekit_config.yml',
        'model.safetensors',
        'tokenizer.json',
      ]);
      const yaml = await readFile(join(out, 'mergekit_config.yml'), 'utf8');
      expect(yaml).toContain(`merge_method: ${method}`);
      const card = await readFile(join(out, 'README.md'), 'utf8');
      expect(card).toMatch(/model\.safetensors \| \d+ \| [0-9a-f]{64}/);
      const json = JSON.parse(await readFile(stats, 'utf8')) as {
        models: {
          changed: number;
          unique: number;
          shared: number;
          rho: number;
          lambda: number;
          overlap: number[];
        }[];
        tensors: { counts: number[] }[];
      };
      for (const model of json.models) {
        expect(model).toMatchObject({ changed: 4, unique: 1, shared: 3, rho: 3, overlap: [1, 0, 3] });
        // The λ the merge applied: RAM+'s 1 + 0.1·min(ρ, 2), and 1 for RAM.
        expect(model.lambda).toBeCloseTo(method === 'ram' ? 1 : 1.2, 12);
      }
      expect(at(json.tensors, 0).counts).toEqual([3, 3, 0, 3]);
    }
  });

  it('merges Model Breadcrumbs from --density and --gamma, and names its rule in the card', async () => {
    const out = join(dir, 'out-breadcrumbs');
    const result = await runCli([
      'merge',
      '--base',
      join(dir, 'base'),
      ...models(),
      '--method',
      'breadcrumbs',
      '--density',
      '0.5',
      '--gamma',
      '0.15',
      '--cpu',
      '--out',
      out,
    ]);
    expect(result.code, result.stderr).toBe(0);
    // n = 9: each agent drops its 1 largest |τ| (element 4), keeps the next 4 (by hand from SPEC.md's
    // worked example), then the kept τ are summed (weight 1, λ 1, no normalize).
    const want = [0, 1.5, 0, 1.5, 0, 0.2, 0.1, 0, 0.1];
    const merged = await readTensor(join(out, 'model.safetensors'), 'w');
    want.forEach((value, i) => expect(merged[i]).toBeCloseTo(value, 6));
    const yaml = await readFile(join(out, 'mergekit_config.yml'), 'utf8');
    expect(yaml).toContain('merge_method: breadcrumbs');
    expect(yaml).toContain('gamma: 0.15');
    expect(await readFile(join(out, 'README.md'), 'utf8')).toContain('Tie rule: Breadcrumbs drops');
    // What the merge summed, counted in it: the oracle's count from the reference's band of τ.
    const values: TensorValues = {
      name: 'w',
      dtype: 'F32',
      base: Float64Array.from(WORKED_EXAMPLE.base),
      agents: agentNames.map((name) => Float64Array.from(WORKED_EXAMPLE.agents[name])),
    };
    const taus = bandTaus(values, [0.5, 0.5, 0.5], [0.15, 0.15, 0.15]);
    const branches = parseBranches(await readFile(join(out, BRANCHES_FILE), 'utf8'));
    expect(branches).toMatchObject({ source: 'merge', numel: 9, ...oracleBranches(taus, [1, 1, 1], false) });
  });

  it('runs a mergekit YAML recipe', async () => {
    const recipe = join(dir, 'recipe.yml');
    await writeFile(
      recipe,
      [
        'merge_method: task_arithmetic',
        `base_model: ${join(dir, 'base')}`,
        'models:',
        ...agentNames.flatMap((name) => [
          `  - model: ${join(dir, name)}`,
          '    parameters:',
          '      weight: 0.3333333333333333',
        ]),
        'parameters:',
        '  lambda: 1.0',
        'dtype: float32',
      ].join('\n'),
    );
    const out = join(dir, 'out-yaml');
    const result = await runCli(['merge', '--config', recipe, '--cpu', '--out', out]);
    expect(result.code).toBe(0);
    const merged = await readTensor(join(out, 'model.safetensors'), 'w');
    // Dilution: the unique 0.2 of "tool" becomes 0.0667.
    expect(merged[5]).toBeCloseTo(0.2 / 3, 6);
  });

  it('merges RAM+ with --stats-in from analyze as without it, refuses them for other files', async () => {
    const statsIn = join(dir, 'stats-in.json');
    const analyzed = await runCli([
      'analyze',
      '--base',
      join(dir, 'base'),
      ...models(),
      '--cpu',
      '--json',
      statsIn,
    ]);
    expect(analyzed.code, analyzed.stderr).toBe(0);
    const merge = (out: string, agents: string[], extra: string[]) =>
      runCli([
        'merge',
        '--base',
        join(dir, 'base'),
        ...agents.flatMap((a) => ['--model', a]),
        '--method',
        'ramplus',
        '--cpu',
        '--out',
        out,
        ...extra,
      ]);
    const agents = agentNames.map((name) => join(dir, name));
    const plain = await merge(join(dir, 'out-plain'), agents, []);
    expect(plain.code, plain.stderr).toBe(0);
    const reused = await merge(join(dir, 'out-reused'), agents, ['--stats-in', statsIn]);
    expect(reused.code, reused.stderr).toBe(0);
    const weights = (out: string) => readFile(join(out, 'model.safetensors'));
    expect((await weights(join(dir, 'out-reused'))).equals(await weights(join(dir, 'out-plain')))).toBe(true);

    // The λ come from the file: other counts there give other λ (ρ = 0.5: λ = 1 + 0.1·0.5).
    type Counts = { changed: number; unique: number; shared: number; overlap: number[]; rho: number };
    const json = JSON.parse(await readFile(statsIn, 'utf8')) as { models: Counts[] };
    // A ρ that contradicts the counts beside it is refused, naming the agent (issue 38).
    for (const m of json.models) m.rho = 0.5;
    const contradicting = join(dir, 'stats-contradicting.json');
    await writeFile(contradicting, JSON.stringify(json));
    const refused = await merge(join(dir, 'out-contradicting'), agents, ['--stats-in', contradicting]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('agent 1: rho 0.5 contradicts its counts (shared 3 / unique 1 = 3)');
    for (const m of json.models) Object.assign(m, { changed: 3, unique: 2, shared: 1, overlap: [2, 1, 0] });
    const edited = join(dir, 'stats-edited.json');
    await writeFile(edited, JSON.stringify(json));
    const fromFile = await merge(join(dir, 'out-edited'), agents, ['--stats-in', edited]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.stderr).toContain('λ = [1.0500, 1.0500, 1.0500]');
    expect(plain.stderr).toContain('λ = [1.2000, 1.2000, 1.2000]');

    // Same size, another header (w as 1×9): checked before anything else reads the weights.
    await writeModelFolder(join(dir, 'memory-moved'), [
      floatTensor('w', 'F32', [1, 9], WORKED_EXAMPLE.agents.memory),
      rawTensor('steps', 'I64', [1], new Uint8Array([7, 0, 0, 0, 0, 0, 0, 0])),
    ]);
    const other = await merge(
      join(dir, 'out-other'),
      [...agents.slice(0, 2), join(dir, 'memory-moved')],
      ['--stats-in', statsIn],
    );
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('agent 3 file model.safetensors has another header');
    expect(await readdir(join(dir, 'out-other')).catch(() => [])).toEqual([]);
  }, 30_000);

  it('refuses a mismatched agent before reading weights, and leaves nothing behind', async () => {
    await writeModelFolder(join(dir, 'odd'), [floatTensor('w', 'F32', [9], WORKED_EXAMPLE.agents.tool)]);
    const out = join(dir, 'out-odd');
    const result = await runCli([
      'merge',
      '--base',
      join(dir, 'base'),
      '--model',
      join(dir, 'odd'),
      '--method',
      'ram',
      '--cpu',
      '--out',
      out,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('w');
    expect(result.stderr).toMatch(/shape/);
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });

  it('warns, as the studio does, of an agent that does not look fine-tuned from the base', async () => {
    // Not one element as the base holds it (the base is all zeros): another model's weights.
    const values = Array.from({ length: 9 }, (_, i) => 0.25 + i);
    await writeModelFolder(join(dir, 'stranger'), [
      floatTensor('w', 'F32', [3, 3], values),
      rawTensor('steps', 'I64', [1], new Uint8Array([7, 0, 0, 0, 0, 0, 0, 0])),
    ]);
    const merge = (model: string, out: string) =>
      runCli([
        'merge',
        '--base',
        join(dir, 'base'),
        '--model',
        model,
        '--method',
        'ram',
        '--cpu',
        '--out',
        out,
      ]);
    const stranger = await merge(join(dir, 'stranger'), join(dir, 'out-stranger'));
    expect(stranger.code, stranger.stderr).toBe(0);
    expect(stranger.stderr).toContain(
      `Warning: ${join(dir, 'stranger')} does not look fine-tuned from this base (0.0% of 9 sampled elements ` +
        'identical, no cosine): merging models of different bases gives meaningless weights.',
    );
    const coding = await merge(join(dir, 'coding'), join(dir, 'out-coding'));
    expect(coding.code, coding.stderr).toBe(0);
    expect(coding.stderr).not.toContain('Warning');
  });

  it('says the per-tensor λ of ramplus_tl as their range, each tensor in the card', async () => {
    const out = join(dir, 'out-tl');
    const result = await runCli([
      'merge',
      '--base',
      join(dir, 'base'),
      ...models(),
      '--method',
      'ramplus_tl',
      '--cpu',
      '--out',
      out,
    ]);
    expect(result.code, result.stderr).toBe(0);
    // The worked example: ρ = 3 in w for every agent, clipped to mergekit's α = 0.2: λ = 1 + 0.1·0.2.
    expect(result.stderr).toContain(
      "λ per tensor = [1.020000, 1.020000, 1.020000] (each tensor's in README.md, “Per-tensor λ”)",
    );
    const card = await readFile(join(out, 'README.md'), 'utf8');
    expect(card).toContain('- agent 1: `');
    expect(card).toContain('(λ per tensor 1.020000: see “Per-tensor λ” below)');
    expect(card).toContain('| w | 1.020000 | 1.020000 | 1.020000 |');
    expect(card).not.toContain('λ = 1.000000');
  });

  it('rejects usage errors with exit code 2', async () => {
    const result = await runCli([
      'merge',
      '--base',
      join(dir, 'base'),
      ...models(),
      '--method',
      'nope',
      '--cpu',
      '--out',
      join(dir, 'x'),
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown --method nope');
  });

  it('refuses a --memory-budget under 1 MiB before reading anything', async () => {
    const out = join(dir, 'budget');
    const result = await runCli([
      'merge',
      '--base',
      join(dir, 'base'),
      ...models(),
      '--method',
      'ram',
      '--memory-budget',
      '4096',
      '--out',
      out,
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--memory-budget must be a whole number of bytes, at least 1048576');
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });
});

describe('merge-studio arena', () => {
  it('scores a demo model with the same numbers as the arena in process', async () => {
    const out = join(dir, 'arena.json');
    const result = await runCli(['arena', 'public/demo/key', '--episodes', '20', '--json', out]);
    expect(result.code, result.stderr).toBe(0);
    const json = JSON.parse(await readFile(out, 'utf8')) as {
      tasks: { name: string; score: number; episodes: number }[];
      mean: number;
    };
    const model = await loadModel('public/demo/key');
    const want = evaluate(await modelDemoTensors(model), model.config as never, { episodes: 20 });
    expect(json).toEqual(want);
    expect(result.stdout).toContain(`mean  ${want.mean.toFixed(4)}`);
  });
});

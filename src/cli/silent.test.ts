// The fault trials of issue 10 against the real command (CPU engine): two merges into one --out,
// signals mid-merge, an agent shard rewritten in place, stdout through a pipe, a low open-file
// limit, read-only and full output file systems, and terminal escapes in what is printed. Each ends
// with nothing left that looks complete, or with one whole model.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeLlamaSet } from '../bench/llama-set.ts';
import { nodeFolder } from '../io/node.ts';
import { at, must } from '../io/checked.ts';
import { BIN, runCli, type CliResult } from '../test/cli.ts';
import { floatTensor, writeModelFolder } from '../test/fixtures.ts';

let dir: string;
let set: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-silent-'));
  set = join(dir, 'set');
  // About 40 shards per model and a few seconds of --cpu merge: long enough to interrupt.
  await writeLlamaSet(
    { layers: 24, hidden: 64, vocab: 512, agents: 2, seed: 3, shardBytes: 100_000 },
    (name) => nodeFolder(join(set, name)),
  );
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const mergeArgs = (out: string, weight = '1', agent1 = join(set, 'agent-1')): string[] => [
  'merge',
  '--base',
  join(set, 'base'),
  '--model',
  join(set, 'agent-0'),
  '--model',
  agent1,
  '--method',
  'task_arithmetic',
  '--weight',
  weight,
  '--cpu',
  '--out',
  out,
];

/** Starts the CLI; `started` resolves once the merge has written progress, i.e. is mid-merge. */
function startCli(args: string[]): {
  pid: number;
  started: Promise<void>;
  done: Promise<CliResult>;
  kill(signal: NodeJS.Signals): void;
} {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let onStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (onStarted = resolve));
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (/merge +\d+%/.test(stderr)) onStarted();
  });
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { pid: must(child.pid, 'the CLI process id'), started, done, kill: (signal) => child.kill(signal) };
}

/** Everything under `parent` whose name says it is unfinished or a working folder. */
async function leftovers(parent: string): Promise<string[]> {
  const names = await readdir(parent, { recursive: true });
  return names.filter((n) => /\.partial$/.test(n));
}

/** A published folder is whole: every shard the model card lists is there with its sha256. */
async function expectWhole(out: string): Promise<string> {
  const files = await readdir(out);
  for (const f of ['config.json', 'mergekit_config.yml', 'README.md']) expect(files).toContain(f);
  const card = await readFile(join(out, 'README.md'), 'utf8');
  const rows = [
    ...card.matchAll(/^\| (model(?:-\d{5}-of-\d{5})?\.safetensors) \| \d+ \| ([0-9a-f]{64}) \|$/gm),
  ];
  expect(rows.length).toBeGreaterThan(0);
  if (rows.length > 1) {
    const index = JSON.parse(await readFile(join(out, 'model.safetensors.index.json'), 'utf8')) as {
      weight_map: Record<string, string>;
    };
    expect(rows.map((r) => r[1]).sort()).toEqual([...new Set(Object.values(index.weight_map))].sort());
  }
  expect(files.filter((f) => f.endsWith('.safetensors')).sort()).toEqual(rows.map((r) => r[1]).sort());
  for (const [, file, sha] of rows)
    expect(
      createHash('sha256')
        .update(await readFile(join(out, must(file, 'a shard named in the card'))))
        .digest('hex'),
      file,
    ).toBe(sha);
  return card;
}

describe('exclusive output', () => {
  it('lets exactly one of two merges started together into one new --out win, whole', async () => {
    const out = join(dir, 'race', 'out');
    await mkdir(join(dir, 'race'));
    const runs = [startCli(mergeArgs(out, '1')), startCli(mergeArgs(out, '0.5'))];
    const results = await Promise.all(runs.map((r) => r.done));
    const winners = results.filter((r) => r.code === 0);
    expect(
      results.map((r) => r.code),
      results.map((r) => r.stderr).join('\n'),
    ).toContain(0);
    expect(winners).toHaveLength(1);
    const loser = must(
      results.find((r) => r.code !== 0),
      'the merge that lost',
    );
    expect(loser.code).toBe(1);
    expect(loser.stderr).toMatch(/another merge is writing --out|is not empty|filled by something else/);
    const card = await expectWhole(out);
    // The recipe in the folder is the winner's, and so is every shard (the sha256 above).
    const weight = winners[0] === results[0] ? '1' : '0.5';
    const yaml = await readFile(join(out, 'mergekit_config.yml'), 'utf8');
    expect(yaml.match(/weight: [\d.]+/g)).toEqual([`weight: ${weight}`, `weight: ${weight}`]);
    expect(card).toContain('task_arithmetic');
    expect(await leftovers(join(dir, 'race'))).toEqual([]);
  }, 60_000);

  it('refuses a non-empty --out before reading any weights', async () => {
    const out = join(dir, 'full-out');
    await mkdir(out);
    await writeFile(join(out, 'keep.txt'), 'mine');
    const result = await runCli(mergeArgs(out));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('is not empty');
    expect(result.stderr).not.toContain('Engine:');
    expect(await readdir(out)).toEqual(['keep.txt']);
  }, 30_000);
});

describe('signals mid-merge leave nothing that looks complete', () => {
  const cases: { name: string; signals: NodeJS.Signals[]; code: number }[] = [
    { name: 'SIGINT', signals: ['SIGINT'], code: 130 },
    { name: 'SIGINT twice', signals: ['SIGINT', 'SIGINT'], code: 130 },
    { name: 'SIGTERM', signals: ['SIGTERM'], code: 143 },
    { name: 'SIGHUP', signals: ['SIGHUP'], code: 129 },
  ];
  it.each(cases)(
    '$name',
    async ({ name, signals, code }) => {
      const parent = join(dir, `signal-${name.replace(/ /g, '-')}`);
      await mkdir(parent);
      const out = join(parent, 'out');
      const run = startCli(mergeArgs(out));
      await run.started;
      for (const signal of signals) run.kill(signal);
      const result = await run.done;
      expect(result.code, result.stderr).toBe(code);
      expect(result.stderr).toMatch(/cancel|stopped/);
      expect(await readdir(parent)).toEqual([]);
    },
    60_000,
  );
});

describe('inputs must not change during a merge', () => {
  it('fails naming the agent shard rewritten in place, and publishes nothing', async () => {
    const agent = join(dir, 'agent-copy');
    await cp(join(set, 'agent-1'), agent, { recursive: true });
    const shard = at((await readdir(agent)).filter((f) => f.endsWith('.safetensors')).sort(), 3, 'shards');
    const parent = join(dir, 'rewrite');
    await mkdir(parent);
    const run = startCli(mergeArgs(join(parent, 'out'), '1', agent));
    await run.started;
    // Same size, other bytes: what a second download or training step into the same folder does.
    const bytes = await readFile(join(agent, shard));
    for (let i = bytes.length - 64; i < bytes.length; i++) bytes[i] = at(bytes, i) ^ 0x55;
    await writeFile(join(agent, shard), bytes);
    const result = await run.done;
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(join(agent, shard));
    expect(result.stderr).toMatch(/was modified during the merge/);
    expect(await readdir(parent)).toEqual([]);
  }, 60_000);

  it('says the file changed, not that it holds NaN, when the rewrite put NaN where the merge reads next', async () => {
    const agent = join(dir, 'agent-rewritten');
    await cp(join(set, 'agent-1'), agent, { recursive: true });
    const shards = (await readdir(agent)).filter((f) => f.endsWith('.safetensors')).sort();
    const shard = at(shards, shards.length - 1, 'shards');
    const parent = join(dir, 'rewrite-values');
    await mkdir(parent);
    const run = startCli(mergeArgs(join(parent, 'out'), '1', agent));
    await run.started;
    // The header stays valid; every value after it becomes NaN (all bits set), read after this.
    const bytes = await readFile(join(agent, shard));
    const dataStart = 8 + Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
    bytes.fill(0xff, dataStart);
    await writeFile(join(agent, shard), bytes);
    const result = await run.done;
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(join(agent, shard));
    expect(result.stderr).toMatch(/was modified during the merge/);
    expect(result.stderr).not.toMatch(/NaN|non-finite|holds/);
    expect(await readdir(parent)).toEqual([]);
  }, 60_000);
});

describe('output that the process prints', () => {
  it('writes all of inspect --json through a pipe (more than 64 KiB)', async () => {
    const folder = join(dir, 'many-tensors');
    const names = Array.from({ length: 3000 }, (_, i) => `model.layers.${i}.self_attn.q_proj.weight`);
    await writeModelFolder(
      folder,
      names.map((name) => floatTensor(name, 'F32', [1], [1])),
    );
    // A reader that starts late: the pipe (64 KiB) fills long before the command is done writing.
    const child = spawnSync(
      'sh',
      ['-c', `'${process.execPath}' '${BIN}' inspect '${folder}' --json | (sleep 1; cat)`],
      { encoding: 'utf8', timeout: 30_000, maxBuffer: 1 << 26 },
    );
    expect(child.status, child.stderr).toBe(0);
    expect(child.stdout.length).toBeGreaterThan(4 * 65_536);
    const report = JSON.parse(child.stdout) as { tensors: { name: string }[] };
    expect(report.tensors.map((t) => t.name).sort()).toEqual(names.sort());
  }, 30_000);

  it('escapes terminal control characters from file names and config.json', async () => {
    const folder = join(dir, 'evil\u001b[2Jname');
    await writeModelFolder(folder, [floatTensor('w', 'F32', [2], [1, 2])], {
      config: { model_type: 'toy\u001b]0;owned\u0007', architectures: ['A\u009b31m'] },
    });
    const result = await runCli(['inspect', folder]);
    expect(result.code, result.stderr).toBe(0);
    // eslint-disable-next-line no-control-regex
    expect(result.stdout).not.toMatch(/[\u001b\u0007\u009b]/);
    expect(result.stdout).toContain('toy\\x1b]0;owned\\x07');
    expect(result.stdout).toContain('\\x9b31m');
  }, 30_000);
});

describe('limits of the machine', () => {
  it('merges 3 × ~40 shards under ulimit -n 64', async () => {
    const out = join(dir, 'ulimit-out');
    const args = mergeArgs(out).map((a) => `'${a}'`);
    const child = spawnSync(
      'bash',
      ['-c', `ulimit -n 64 && exec '${process.execPath}' '${BIN}' ${args.join(' ')}`],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(child.status, child.stderr).toBe(0);
    expect((await readdir(join(set, 'base'))).length).toBeGreaterThan(36);
    const card = await expectWhole(out);
    // The card names the tool's version from package.json and every input file with its sha256.
    const { version } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    expect(card).toContain(`Made with merge-studio ${version} `);
    for (const model of ['base', 'agent-0', 'agent-1']) {
      const shard = at((await readdir(join(set, model))).sort(), 5, `${model}'s files`);
      const sha = createHash('sha256')
        .update(await readFile(join(set, model, shard)))
        .digest('hex');
      expect(card).toMatch(
        new RegExp(`\\| ${model} \\| ${shard.replace(/\./g, '\\.')} \\| \\d+ \\| ${sha} \\|`),
      );
    }
  }, 60_000);

  // A private mount namespace gives a tiny or read-only tmpfs without touching the machine.
  const canMount =
    spawnSync('unshare', ['-rm', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /tmp'], { encoding: 'utf8' })
      .status === 0;
  const inMount = (options: string, out: string): ReturnType<typeof spawnSync> => {
    const args = mergeArgs(join(out, 'model')).map((a) => `'${a}'`);
    const script = `mount -t tmpfs -o ${options} tmpfs '${out}' && exec '${process.execPath}' '${BIN}' ${args.join(' ')}`;
    return spawnSync('unshare', ['-rm', 'sh', '-c', script], { encoding: 'utf8', timeout: 60_000 });
  };

  it.skipIf(!canMount)(
    'fails on a full disk before reading any weights',
    async () => {
      const out = join(dir, 'tiny');
      await mkdir(out);
      const child = inMount('size=256k', out);
      expect(child.status, String(child.stderr)).toBe(1);
      expect(String(child.stderr)).toMatch(/not enough free space for --out .*tiny\/model/);
      expect(String(child.stderr)).not.toContain('Engine:');
    },
    60_000,
  );

  it.skipIf(!canMount)(
    'fails on a read-only --out with EROFS before reading any weights',
    async () => {
      const out = join(dir, 'readonly');
      await mkdir(out);
      const child = inMount('ro', out);
      expect(child.status, String(child.stderr)).toBe(1);
      expect(String(child.stderr)).toMatch(/read-only \(EROFS\)/);
      expect(String(child.stderr)).not.toContain('Engine:');
    },
    60_000,
  );
});

describe('NaN and ±Inf in the inputs', () => {
  it('analyze --json counts them per model and tensor; merge stops naming the model and tensor', async () => {
    const root = join(dir, 'nan');
    const base = Array.from({ length: 12 }, (_, i) => i / 16);
    const agent = base.map((x, i) => (i % 2 ? x + 0.25 : x));
    agent[3] = NaN;
    agent[5] = Infinity;
    await writeModelFolder(join(root, 'base'), [floatTensor('w', 'F32', [12], base)]);
    await writeModelFolder(join(root, 'sick'), [floatTensor('w', 'F32', [12], agent)]);
    await writeModelFolder(join(root, 'fine'), [
      floatTensor(
        'w',
        'F32',
        [12],
        base.map((x) => x - 0.5),
      ),
    ]);
    const models = ['--model', join(root, 'sick'), '--model', join(root, 'fine')];
    const json = join(root, 'stats.json');
    const analyzed = await runCli([
      'analyze',
      '--base',
      join(root, 'base'),
      ...models,
      '--cpu',
      '--json',
      json,
    ]);
    expect(analyzed.code, analyzed.stderr).toBe(0);
    const stats = JSON.parse(await readFile(json, 'utf8')) as {
      nonFinite: number;
      base: { nonFinite: number };
      models: { nonFinite: number }[];
      tensors: { counts: number[]; nonFinite: number; nonFiniteModels: number[] }[];
    };
    expect([stats.nonFinite, stats.base.nonFinite, stats.models.map((m) => m.nonFinite)]).toEqual([
      2,
      0,
      [2, 0],
    ]);
    expect(stats.tensors[0]).toMatchObject({ nonFinite: 2, nonFiniteModels: [0, 2, 0] });
    expect(at(stats.tensors, 0).counts.reduce((a, b) => a + b, 0)).toBe(10);

    const out = join(root, 'out');
    const merged = await runCli([
      'merge',
      '--base',
      join(root, 'base'),
      ...models,
      '--method',
      'ram',
      '--cpu',
      '--out',
      out,
    ]);
    expect(merged.code).toBe(1);
    expect(merged.stderr).toContain(
      'cannot merge tensor w: 2 elements where the models differ and agent sick (2)',
    );
    expect((await readdir(root)).sort()).toEqual(['base', 'fine', 'sick', 'stats.json']);
  }, 30_000);
});

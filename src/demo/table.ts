// Node script of `npm run demo:table`: scores the base, each agent and their merges (made by the
// product's CLI, `merge-studio merge --cpu`) in the arena, and prints a Markdown table.

import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ARENA_EPISODES, evaluate, loadDemoWeights, readDemoSafetensors, type ArenaResult } from './arena.ts';
import { at } from '../io/checked.ts';
import { policyConfigFromJson, type PolicyConfig } from './policy.ts';

interface MergeRow {
  label: string;
  /** CLI arguments after the --base/--model list. */
  cli: string[];
}

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

function mergeRows(agents: number): MergeRow[] {
  const each = (flag: string, value: string): string[] =>
    Array.from({ length: agents }, () => [flag, value]).flat();
  return [
    { label: 'linear (mean of agents)', cli: ['--method', 'linear'] },
    {
      label: `task arithmetic, weight 1/${agents}`,
      cli: ['--method', 'task_arithmetic', ...each('--weight', String(1 / agents))],
    },
    {
      label: 'task arithmetic, weight 1',
      cli: ['--method', 'task_arithmetic', ...each('--weight', '1')],
    },
    {
      label: 'TIES, density 0.5',
      cli: ['--method', 'ties', ...each('--density', '0.5')],
    },
    {
      label: 'DARE linear, density 0.5, seed 1',
      cli: ['--method', 'dare_linear', ...each('--density', '0.5'), '--seed', '1'],
    },
    { label: 'RAM', cli: ['--method', 'ram'] },
    {
      label: 'RAM+, r = 0.1, α = 2',
      cli: ['--method', 'ramplus', '--r', '0.1', '--alpha', '2'],
    },
  ];
}

interface Options {
  demo: string;
  episodes: number;
}

function parseArgs(argv: readonly string[]): Options {
  const options: Options = {
    demo: join(repoRoot, 'public/demo'),
    episodes: ARENA_EPISODES,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(
        'npm run demo:table -- [--demo DIR] [--episodes N]\n  Plays the demo models and their merges in the grid-world arena and prints the table of scores.\n',
      );
      process.exit(0);
    }
    if (arg === '--demo' && value !== undefined) options.demo = value;
    else if (arg === '--episodes' && value !== undefined) options.episodes = Number(value);
    else
      throw new Error(`demo:table: unknown argument ${arg}. Usage: demo:table [--demo DIR] [--episodes N]`);
    i += 1; // both options take a value
  }
  return options;
}

async function readWeights(folder: string): Promise<Map<string, Float32Array>> {
  const bytes = new Uint8Array(await readFile(join(folder, 'model.safetensors')));
  return loadDemoWeights(readDemoSafetensors(bytes, join(folder, 'model.safetensors')));
}

/** Runs `merge-studio merge --cpu` into a temporary folder and reads the merged weights back. */
async function cliMerge(
  base: string,
  agents: readonly string[],
  args: readonly string[],
): Promise<Map<string, Float32Array>> {
  const out = await mkdtemp(join(tmpdir(), 'merge-studio-demo-'));
  try {
    const argv = [
      join(repoRoot, 'bin/merge-studio.mjs'),
      'merge',
      '--base',
      base,
      ...agents.flatMap((a) => ['--model', a]),
      ...args,
      '--cpu',
      '--out',
      join(out, 'merged'),
    ];
    const result = spawnSync(process.execPath, argv, { encoding: 'utf8', timeout: 600_000 });
    if (result.status !== 0) {
      const said = `${result.stderr ?? ''}${result.stdout ?? ''}`.trim().split('\n').slice(-5).join('\n');
      throw new Error(`merge-studio ${args.join(' ')} failed (exit ${result.status}): ${said}`);
    }
    return await readWeights(join(out, 'merged'));
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

function row(label: string, result: ArenaResult): string {
  return `| ${label} | ${result.tasks.map((t) => t.score.toFixed(3)).join(' | ')} | ${result.mean.toFixed(3)} |`;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const manifest = JSON.parse(await readFile(join(options.demo, 'manifest.json'), 'utf8')) as {
    base: string;
    agents: string[];
  };
  const baseFolder = join(options.demo, manifest.base);
  const agentFolders = manifest.agents.map((a) => join(options.demo, a));
  const config: PolicyConfig = policyConfigFromJson(
    JSON.parse(await readFile(join(baseFolder, 'config.json'), 'utf8')),
  );
  const score = (weights: ReadonlyMap<string, Float32Array>): ArenaResult =>
    evaluate(weights, config, { episodes: options.episodes });

  const base = await readWeights(baseFolder);
  const agents = await Promise.all(agentFolders.map(readWeights));
  const lines = [
    `| model | ${config.tasks.join(' | ')} | mean |`,
    `|---|${config.tasks.map(() => '---:|').join('')}---:|`,
  ];
  lines.push(row('base', score(base)));
  manifest.agents.forEach((name, t) =>
    lines.push(row(`agent: ${name}`, score(at(agents, t, 'agent weights')))),
  );
  for (const merge of mergeRows(agents.length)) {
    const merged = await cliMerge(baseFolder, agentFolders, merge.cli);
    lines.push(row(merge.label, score(merged)));
    process.stderr.write(`${merge.label}: done\n`);
  }
  const how = 'merge-studio merge --cpu';
  process.stdout.write(
    `Arena: ${options.episodes} fixed greedy episodes per task; merges by ${how}.\n\n${lines.join('\n')}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`demo:table: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

// Node entry of `npm run demo:train`: trains the demo set from its seed and writes public/demo/
// (one BF16 model folder per model plus manifest.json); `--check` compares instead of writing.

import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ARENA_EPISODES, ARENA_SEED, evaluate } from './arena.ts';
import { TASK_INFO } from './env.ts';
import { changeStats } from './stats.ts';
import { DEMO_TRAIN_CONFIG, serializeModel, trainDemoSet } from './train.ts';

interface Options {
  out: string;
  check: boolean;
}

function parseArgs(argv: readonly string[]): Options {
  const options: Options = { out: 'public/demo', check: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(
        'npm run demo:train -- [--out DIR] [--check]\n  Trains the demo base and its three grid-world agents into DIR (default public/demo);\n  --check retrains and compares with the committed demo instead of writing.\n',
      );
      process.exit(0);
    }
    if (arg === '--check') options.check = true;
    else if (arg === '--out' && value !== undefined) {
      options.out = value;
      i += 1;
    } else throw new Error(`demo:train: unknown argument ${arg}. Usage: demo:train [--out DIR] [--check]`);
  }
  return options;
}

const sha256 = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');
const round = (x: number): number => Math.round(x * 1e6) / 1e6;

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const config = DEMO_TRAIN_CONFIG;
  const started = Date.now();
  let lastPrint = 0;
  const set = trainDemoSet(config, (phase, update, updates, score) => {
    if (update === updates - 1 || Date.now() - lastPrint > 2000) {
      lastPrint = Date.now();
      process.stderr.write(`${phase}: update ${update + 1}/${updates}, batch score ${score.toFixed(3)}\n`);
    }
  });
  const trainSeconds = (Date.now() - started) / 1000;

  const models = [
    { name: 'base', params: set.base.params, role: { role: 'base' as const } },
    ...set.agents.map((a) => ({
      name: a.task,
      params: a.params,
      role: { role: 'agent' as const, task: a.task },
    })),
  ];
  const stats = changeStats(
    set.base.params,
    set.agents.map((a) => ({ name: a.task, params: a.params })),
  );
  const files = new Map<string, Uint8Array | string>();
  const entries = models.map((model) => {
    const { safetensors, configJson } = serializeModel(
      set.policyConfig,
      model.params,
      model.role,
      config.seed,
    );
    files.set(`${model.name}/model.safetensors`, safetensors);
    files.set(`${model.name}/config.json`, configJson);
    const arena = evaluate(model.params, set.policyConfig);
    const agent = set.agents.find((a) => a.task === model.name);
    const change = stats.find((s) => s.name === model.name);
    return {
      name: model.name,
      role: model.role.role,
      ...(agent ? { task: agent.task, description: TASK_INFO[agent.task] } : {}),
      path: model.name,
      files: { 'model.safetensors': sha256(safetensors), 'config.json': sha256(configJson) },
      bytes: safetensors.byteLength,
      arena: {
        ...Object.fromEntries(arena.tasks.map((t) => [t.name, round(t.score)])),
        mean: round(arena.mean),
      },
      ...(agent && change
        ? {
            changed: change.changed,
            unique: change.unique,
            numel: change.numel,
            master_changed: agent.masterChanged,
          }
        : {}),
    };
  });
  const manifest = {
    name: 'Merge Studio demo set: gridworld agents RL-trained from one base',
    generator: 'npm run demo:train (src/demo/train-main.ts)',
    seed: config.seed,
    train_config: config,
    arena: {
      episodes: ARENA_EPISODES,
      seed: ARENA_SEED,
      policy: 'greedy (argmax, ties to the lowest action)',
    },
    base: 'base',
    agents: set.agents.map((a) => a.task),
    models: entries,
  };
  files.set('manifest.json', `${JSON.stringify(manifest, null, 2)}\n`);

  if (options.check) {
    const differing: string[] = [];
    for (const [path, content] of files) {
      const existing = await readFile(join(options.out, path)).catch(() => undefined);
      const wanted = typeof content === 'string' ? Buffer.from(content) : content;
      if (!existing || !Buffer.from(wanted).equals(existing)) differing.push(path);
    }
    if (differing.length > 0) {
      process.stderr.write(
        `demo:train --check: these files differ from a fresh run: ${differing.join(', ')}\n`,
      );
      process.exit(1);
    }
    process.stdout.write(
      `demo:train --check: all ${files.size} files in ${options.out} are reproduced bit for bit\n`,
    );
  } else {
    for (const [path, content] of files) {
      await mkdir(join(options.out, path, '..'), { recursive: true });
      await writeFile(join(options.out, path), content);
    }
    process.stdout.write(`wrote ${files.size} files to ${options.out}\n`);
  }
  for (const e of entries) process.stdout.write(`${e.name}: ${JSON.stringify(e.arena)}\n`);
  for (const s of stats) {
    process.stdout.write(
      `${s.name}: changed ${(100 * s.changedShare).toFixed(1)}% of ${s.numel}, unique ${(100 * s.uniqueShare).toFixed(1)}% of those\n`,
    );
  }
  process.stdout.write(`trained in ${trainSeconds.toFixed(1)} s\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`demo:train: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

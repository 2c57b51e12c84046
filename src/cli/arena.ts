// `merge-studio arena MODEL_PATH`: scores a model of the demo architecture on every demo task.
import { writeFile } from 'node:fs/promises';
import type { Model } from '../format/model.ts';
import { evaluate, modelDemoTensors } from '../demo/arena.ts';
import { UsageError } from './args.ts';

export async function runArena(
  positionals: string[],
  jsonPath: string | undefined,
  episodes: number | undefined,
  loadModel: (path: string) => Promise<Model>,
): Promise<void> {
  const path = positionals[0];
  if (!path || positionals.length > 1) throw new UsageError('arena takes one MODEL_PATH');
  const model = await loadModel(path);
  if (!model.config)
    throw new Error(
      `${path}: no config.json, so the network's shape is unknown (arena needs the demo architecture)`,
    );
  const tensors = await modelDemoTensors(model);
  const result = evaluate(tensors, model.config as never, episodes === undefined ? {} : { episodes });
  const width = Math.max(4, ...result.tasks.map((t) => t.name.length));
  const lines = result.tasks.map(
    (t) => `${t.name.padEnd(width)}  ${t.score.toFixed(4)}  (${t.episodes} episodes)`,
  );
  lines.push(`${'mean'.padEnd(width)}  ${result.mean.toFixed(4)}`);
  process.stdout.write(`${lines.join('\n')}\n`);
  if (jsonPath) await writeFile(jsonPath, `${JSON.stringify(result, null, 2)}\n`);
}

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { at, must } from '../io/checked.ts';
import { encodeFloats } from '../format/dtype.ts';
import { serializeSafetensors } from '../format/write.ts';
import { arenaEpisodeSeed, evaluate, loadDemoWeights, playEpisode, readDemoSafetensors } from './arena.ts';
import { createEpisode, TASKS } from './env.ts';
import { Policy, policyConfigFromJson, type DemoModelConfig } from './policy.ts';

const demo = join(import.meta.dirname, '../../public/demo');

interface ManifestModel {
  name: string;
  role: 'base' | 'agent';
  task?: string;
  path: string;
  files: Record<string, string>;
  arena: Record<string, number>;
}
const manifest = JSON.parse(readFileSync(join(demo, 'manifest.json'), 'utf8')) as {
  seed: number;
  base: string;
  agents: string[];
  models: ManifestModel[];
};

function load(name: string): { weights: Map<string, Float32Array>; config: DemoModelConfig } {
  const bytes = new Uint8Array(readFileSync(join(demo, name, 'model.safetensors')));
  const config = JSON.parse(readFileSync(join(demo, name, 'config.json'), 'utf8')) as DemoModelConfig;
  return { weights: loadDemoWeights(readDemoSafetensors(bytes)), config };
}

describe('the committed demo set', () => {
  const base = load(manifest.base);
  const baseScores = evaluate(base.weights, base.config);

  it('is one base and an agent per task, BF16, matching the manifest byte for byte', () => {
    expect(manifest.agents).toEqual([...TASKS]);
    for (const model of manifest.models) {
      for (const [file, sha] of Object.entries(model.files)) {
        const bytes = readFileSync(join(demo, model.path, file));
        expect(createHash('sha256').update(bytes).digest('hex')).toBe(sha);
      }
      const tensors = readDemoSafetensors(
        new Uint8Array(readFileSync(join(demo, model.path, 'model.safetensors'))),
      );
      expect(new Set(tensors.map((t) => t.dtype))).toEqual(new Set(['BF16']));
      const config = policyConfigFromJson(
        JSON.parse(readFileSync(join(demo, model.path, 'config.json'), 'utf8')),
      );
      expect(config).toEqual(policyConfigFromJson(base.config));
    }
  });

  it('has each agent clearly beat the base on its own task', () => {
    for (const task of manifest.agents) {
      const agent = load(task);
      const scores = evaluate(agent.weights, agent.config, { tasks: [task as (typeof TASKS)[number]] });
      const own = at(scores.tasks, 0).score;
      const baseOwn = must(
        baseScores.tasks.find((t) => t.name === task),
        `base score on ${task}`,
      ).score;
      expect(own).toBeGreaterThan(0.9);
      expect(own - baseOwn).toBeGreaterThan(0.2);
    }
  });

  it('gives the scores recorded in the manifest, every time', () => {
    for (const model of manifest.models) {
      const { weights, config } = load(model.path);
      const result = evaluate(weights, config);
      for (const t of result.tasks)
        expect(t.score).toBeCloseTo(must(model.arena[t.name], `${model.path} ${t.name}`), 6);
      expect(result.mean).toBeCloseTo(must(model.arena.mean, `${model.path} mean`), 6);
      expect(evaluate(weights, config)).toEqual(result);
    }
  });
});

describe('evaluate', () => {
  const { weights, config } = load(manifest.base);

  it('scores in [0, 1] over the requested episodes and tasks, with the mean of the task scores', () => {
    const result = evaluate(weights, config, { episodes: 12, tasks: ['gems', 'key'] });
    expect(result.tasks.map((t) => [t.name, t.episodes])).toEqual([
      ['gems', 12],
      ['key', 12],
    ]);
    for (const t of result.tasks) expect(t.score >= 0 && t.score <= 1).toBe(true);
    expect(result.mean).toBeCloseTo((at(result.tasks, 0).score + at(result.tasks, 1).score) / 2, 15);
    expect(() => evaluate(weights, config, { episodes: 0 })).toThrow(RangeError);
  });

  it('is the mean of greedy episodes on fixed seeds, and another arena seed gives other layouts', () => {
    const policy = new Policy(policyConfigFromJson(config), weights);
    let total = 0;
    for (let i = 0; i < 10; i++)
      total += playEpisode(policy, 'door', 1, arenaEpisodeSeed(77, 'door', i)).score;
    expect(evaluate(weights, config, { episodes: 10, seed: 77, tasks: ['door'] }).tasks[0]?.score).toBe(
      total / 10,
    );
    expect(createEpisode('door', arenaEpisodeSeed(77, 'door', 0))).not.toEqual(
      createEpisode('door', arenaEpisodeSeed(78, 'door', 0)),
    );
  });

  it('accepts checkpoint tensors directly and refuses a model without the task', () => {
    const tensors = readDemoSafetensors(
      new Uint8Array(readFileSync(join(demo, 'base', 'model.safetensors'))),
    );
    expect(evaluate(tensors, config, { episodes: 5 })).toEqual(evaluate(weights, config, { episodes: 5 }));
    expect(() =>
      evaluate(weights, { ...config, tasks: ['key', 'door', 'swim'] }, { tasks: ['gems'] }),
    ).toThrow(/no task "gems"/);
  });

  it('records the path of a played episode from start to end', () => {
    const policy = new Policy(policyConfigFromJson(config), weights);
    const seed = arenaEpisodeSeed(1, 'key', 0);
    const { path } = playEpisode(policy, 'key', 0, seed);
    expect(path[0]).toBe(createEpisode('key', seed).agent);
    expect(path.length).toBeGreaterThan(1);
  });
});

describe('loadDemoWeights', () => {
  const values = [0.5, -1.25, 3, 0.1];

  it('decodes BF16, F16 and F32', () => {
    for (const dtype of ['BF16', 'F16', 'F32'] as const) {
      const out = loadDemoWeights([{ name: 'w', dtype, shape: [2, 2], bytes: encodeFloats(dtype, values) }]);
      const w = must(out.get('w'), 'w');
      expect(Array.from(w.subarray(0, 3))).toEqual([0.5, -1.25, 3]);
      expect(w[3]).toBeCloseTo(0.1, dtype === 'F32' ? 7 : 2);
    }
  });

  it('rejects other dtypes, wrong byte counts and duplicate names', () => {
    expect(() =>
      loadDemoWeights([{ name: 'w', dtype: 'I32', shape: [1], bytes: new Uint8Array(4) }]),
    ).toThrow(/I32/);
    expect(() =>
      loadDemoWeights([{ name: 'w', dtype: 'F32', shape: [2], bytes: new Uint8Array(4) }]),
    ).toThrow(/bytes/);
    const t = { name: 'w', dtype: 'F32' as const, shape: [1], bytes: new Uint8Array(4) };
    expect(() => loadDemoWeights([t, t])).toThrow(/twice/);
  });

  it('reads tensors out of a whole .safetensors file', () => {
    const file = serializeSafetensors([
      { name: 'b', dtype: 'F16', shape: [4], data: encodeFloats('F16', values) },
      { name: 'a', dtype: 'F32', shape: [4], data: encodeFloats('F32', values) },
    ]);
    const out = loadDemoWeights(readDemoSafetensors(file));
    expect([...out.keys()].sort()).toEqual(['a', 'b']);
    expect(out.get('a')?.[1]).toBe(-1.25);
    expect(() => readDemoSafetensors(file.subarray(0, file.length - 2))).toThrow();
  });
});

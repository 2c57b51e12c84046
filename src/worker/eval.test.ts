// The worker's evaluation jobs on the tiny Qwen2 set, on the CPU reference (Node has no WebGPU here):
// agents writing their own reference completions score every token of them as their top-1, models
// are scored in the request's order under its labels, a candidate merge is scored after them as the
// CLI's --candidate, and a bad probe line or candidate is refused before any model is opened.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openSlot } from './models.ts';
import { defaultParams } from '../methods/defaults.ts';
import { evaluateModels, generateSideBySide, type EvalJobContext } from './eval.ts';
import type { EvalJobProgress, EvalTarget } from './protocol.ts';

const SET = join(import.meta.dirname, '../test/eval-fixtures/qwen2-set');

async function load(slot: string, folder: string): Promise<EvalTarget> {
  const names = (await readdir(join(SET, folder))).filter((n) => n !== 'reference.json');
  const files = await Promise.all(
    names.map(async (name) => ({ name, blob: new Blob([await readFile(join(SET, folder, name))]) })),
  );
  await openSlot(slot, folder, files, () => Promise.reject(new Error('no fetch in tests')));
  return { target: { slot }, label: folder, path: folder };
}

function context(): EvalJobContext & { seen: EvalJobProgress[] } {
  const seen: EvalJobProgress[] = [];
  return { signal: new AbortController().signal, progress: (p) => seen.push(p), seen };
}

describe('worker eval jobs', () => {
  // A worker without WebGPU: the jobs run on the CPU reference.
  beforeAll(() => vi.stubGlobal('navigator', {}));
  afterAll(() => vi.unstubAllGlobals());

  it('lets each agent write its reference set, which it then scores top-1 on every token', async () => {
    const base = await load('t-base', 'base');
    const agents = [await load('t-agent-0', 'agent-0'), await load('t-agent-1', 'agent-1')];
    const ctx = context();
    const result = await evaluateModels(
      {
        models: [base, ...agents],
        probes: {
          kind: 'references',
          prompts: ['The capital of France is', '', 'Once upon a time'],
          writers: agents,
          tokens: 3,
        },
        chat: false,
        maxNewTokens: 0,
      },
      ctx,
    );
    expect(result.models.map((m) => m.label)).toEqual(['base', 'agent-0', 'agent-1']);
    expect(result.sets.map((s) => s.set)).toEqual(['agent-0', 'agent-1']);
    // Greedy ids are each the argmax of what came before, so the writer's own top-1 rate is 1.
    expect(result.sets[0]!.top1Rate[1]).toBe(1);
    expect(result.sets[1]!.top1Rate[2]).toBe(1);
    for (const set of result.sets) expect(set.tokens).toBeGreaterThan(0);
    expect(result.examples.every((e) => e.generated.every((ids) => ids.length === 0))).toBe(true);
    expect(new Set(ctx.seen.map((p) => p.pass))).toEqual(new Set(['references', 'score']));
    expect(ctx.seen.find((p) => p.pass === 'references')).toMatchObject({ models: 2, backend: 'cpu-f64' });
  });

  it('scores candidate merges after the models, merged as they are read; a bad candidate is refused', async () => {
    const base = await load('t-base', 'base');
    const agents = [await load('t-agent-0', 'agent-0'), await load('t-agent-1', 'agent-1')];
    // A linear merge with weights 1, 0 is agent-0, bit for bit: its scores must be agent-0's.
    const first = { ...defaultParams('linear', 2), weights: [1, 0] };
    const candidates = {
      base: 't-base',
      agents: ['t-agent-0', 't-agent-1'],
      recipes: [
        { label: 'linear weight=1,0', params: first },
        { label: 'ramplus r=0.3', params: { ...defaultParams('ramplus', 2), r: 0.3 } },
      ],
    };
    const probes = {
      kind: 'files' as const,
      files: [{ name: 'p.jsonl', text: '{"prompt": "The capital of France is", "completion": " Paris"}' }],
    };
    const ctx = context();
    const result = await evaluateModels(
      { models: [base, ...agents], probes, chat: false, maxNewTokens: 2, candidates },
      ctx,
    );
    expect(result.models.slice(3)).toEqual([
      { label: 'linear weight=1,0', path: 'merge: linear weight=1,0' },
      { label: 'ramplus r=0.3', path: 'merge: ramplus r=0.3' },
    ]);
    const [example] = result.examples;
    expect(example!.nll[3]).toBe(example!.nll[1]);
    expect(example!.generated[3]).toEqual(example!.generated[1]);
    expect(example!.nll[4]).not.toBe(example!.nll[0]);
    expect(ctx.seen.some((p) => p.label === 'ramplus r=0.3')).toBe(true);

    const bad = {
      ...candidates,
      recipes: [{ label: 'ties', params: { ...defaultParams('ties', 2), density: [2] } }],
    };
    await expect(
      evaluateModels({ models: [base], probes, chat: false, maxNewTokens: 0, candidates: bad }, context()),
    ).rejects.toThrow(/^The candidate ties: .*density/);
  });

  it('generates side by side, and refuses a bad probe line by file and line before opening a model', async () => {
    const base = await load('t-base', 'base');
    const generated = await generateSideBySide(
      { models: [base], prompt: 'The capital of France is', chat: false, maxNewTokens: 2 },
      context(),
    );
    expect(generated.models).toEqual([{ label: 'base', path: 'base' }]);
    expect(generated.ids[0]).toHaveLength(2);

    const missing: EvalTarget = { target: { slot: 'not-loaded' }, label: 'x', path: 'x' };
    await expect(
      evaluateModels(
        {
          models: [missing],
          probes: {
            kind: 'files',
            files: [{ name: 'bad.jsonl', text: '{"prompt": "a", "completion": " b"}\n{' }],
          },
          chat: false,
          maxNewTokens: 0,
        },
        context(),
      ),
    ).rejects.toThrow(/^bad\.jsonl:2: not valid JSON/);
  });
});

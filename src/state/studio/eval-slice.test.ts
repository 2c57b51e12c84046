// The Evaluate step's slice against a fake engine: which models a run scores and how the worker is
// asked for them, progress and results of the newest run only, cancel and errors as task states, and
// candidate merges: added once by their CLI name, scored after the models, written by the Merge step.
import { describe, expect, it } from 'vitest';
import type { EngineClient, EngineJob } from '../../worker/client.ts';
import type { EvalJobProgress, EvalResult, WorkerCall, WorkerCalls } from '../../worker/protocol.ts';
import { must } from '../../io/checked.ts';
import { createStudioStore } from '../store.ts';
import { defaultParams } from '../../methods/defaults.ts';
import { evalCandidates } from './eval-slice.ts';
import type { MergeRecord } from './types.ts';

interface Held {
  kind: WorkerCall;
  request: Record<string, unknown>;
  progress?: (p: EvalJobProgress) => void;
  resolve(result: unknown): void;
  reject(error: Error): void;
  cancelled: boolean;
}

/** An engine whose eval and generate calls wait for the test; every other call answers at once. */
function fakeEngine() {
  const held: Held[] = [];
  const calls: { kind: WorkerCall; request: Record<string, unknown> }[] = [];
  const engine: EngineClient = {
    call<K extends WorkerCall>(kind: K, request: WorkerCalls[K]['request'], onProgress?: unknown) {
      const fields = request as unknown as Record<string, unknown>;
      calls.push({ kind, request: fields });
      let entry: Held | undefined;
      const promise = new Promise<WorkerCalls[K]['result']>((resolve, reject) => {
        if (kind === 'eval' || kind === 'generate') {
          entry = {
            kind,
            request: fields,
            progress: onProgress as Held['progress'],
            resolve: resolve as (r: unknown) => void,
            reject,
            cancelled: false,
          };
          held.push(entry);
        } else if (kind === 'open') resolve({ tensors: [] } as never);
        else if (kind === 'check')
          resolve({ compat: { ok: false, issues: [], common: [], notes: [] }, derivation: [] } as never);
        else resolve([] as never);
      });
      const job: EngineJob<WorkerCalls[K]['result']> = {
        promise,
        cancel: () => {
          if (!entry) return;
          entry.cancelled = true;
          entry.reject(Object.assign(new Error('The evaluation was cancelled.'), { name: 'AbortError' }));
        },
      };
      return job;
    },
    terminate: () => undefined,
  };
  return { engine, held, calls };
}

function storeWith(engine: EngineClient) {
  return createStudioStore({
    gpu: {
      environment: () => ({ gpu: undefined, secureContext: true }),
      inspect: async () => {
        throw new Error('unused');
      },
      probe: async () => {
        throw new Error('unused');
      },
      probeInWorker: async () => {
        throw new Error('unused');
      },
    },
    studio: {
      engine,
      demo: async () => ({ base: { label: 'b', files: [] }, agents: [] }),
      now: () => new Date(0),
    },
  });
}

const files = (name: string) => [{ name, blob: new Blob([name]) }];
const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

async function loaded() {
  const fake = fakeEngine();
  const store = storeWith(fake.engine);
  await store.getState().loadFiles('base', null, 'base', files('b'));
  await store.getState().loadAgents([
    { label: 'coder', files: files('c') },
    { label: 'writer', files: files('w') },
  ]);
  return { fake, store };
}

const RESULT: EvalResult = { models: [], examples: [], sets: [] };

describe('evaluation slice', () => {
  it('offers the ready models, the session merges and the library merges not among them, labels distinct', async () => {
    const { store } = await loaded();
    const merge = { id: 1, location: 'opfs', folder: 'm1', params: { method: 'ties' } } as MergeRecord;
    const data = {
      ...store.getState().studio,
      merges: [merge],
      library: {
        status: 'done' as const,
        progress: null,
        error: null,
        result: [
          { folder: 'm1', status: 'complete' },
          { folder: 'coder', status: 'complete' },
          { folder: 'broken', status: 'incomplete' },
        ] as never,
      },
    };
    expect(evalCandidates(data)).toEqual([
      { key: 'base', label: 'base', kind: 'base' },
      { key: 'agent-1', label: 'coder', kind: 'agent' },
      { key: 'agent-2', label: 'writer', kind: 'agent' },
      { key: 'opfs:m1', label: 'merge 1 (ties)', kind: 'merge' },
      { key: 'opfs:coder', label: 'coder (2)', kind: 'merge' },
    ]);
  });

  it('asks the worker for the chosen models and probe files, and keeps the result', async () => {
    const { fake, store } = await loaded();
    const s = store.getState();
    s.addProbeFiles([{ name: 'coder.jsonl', text: '{}' }]);
    s.addProbeFiles([{ name: 'coder.jsonl', text: '{"a":1}' }]);
    s.setEvalIncluded('agent-2', false);
    s.setEvalOptions({ chat: true, maxNewTokens: 3 });
    const run = s.runEval();
    const call = must(fake.held[0], 'the eval call');
    expect(call.kind).toBe('eval');
    expect(call.request).toEqual({
      models: [
        { target: { slot: 'base' }, label: 'base', path: 'base' },
        { target: { slot: 'agent-1' }, label: 'coder', path: 'coder' },
      ],
      probes: { kind: 'files', files: [{ name: 'coder.jsonl', text: '{"a":1}' }] },
      chat: true,
      maxNewTokens: 3,
    });
    const progress = { phase: 'score', model: 1, models: 2, layer: 1, layers: 2 } as EvalJobProgress;
    call.progress?.(progress);
    expect(store.getState().studio.evaluation.run).toMatchObject({ status: 'running', progress });
    call.resolve(RESULT);
    await run;
    const ev = store.getState().studio.evaluation;
    expect(ev.run).toEqual({ status: 'done', progress: null, error: null, result: RESULT });
    expect(ev.scored.map((c) => c.label)).toEqual(['base', 'coder']);
  });

  it('adds candidate merges once by their CLI name, scores them after the models, and writes one', async () => {
    const { fake, store } = await loaded();
    const s = store.getState();
    expect(s.addCandidateMerge({ ...defaultParams('ramplus', 2), r: 0.3 })).toBeNull();
    expect(s.addCandidateMerge({ ...defaultParams('ties', 2), density: [0.7, 0.3] })).toBeNull();
    expect(s.addCandidateMerge({ ...defaultParams('ramplus', 2), r: 0.3 })).toBe(
      'ramplus r=0.3 is among the candidates already.',
    );
    expect(s.addCandidateMerge({ ...defaultParams('ties', 2), density: [0.7] })).toMatch(
      /densities given for 2 agents/,
    );
    s.addProbeFiles([{ name: 'p.jsonl', text: '{}' }]);
    s.setEvalIncluded('agent-2', false);
    const run = s.runEval();
    const call = must(fake.held[0], 'the eval call');
    expect(call.request.candidates).toEqual({
      base: 'base',
      agents: ['agent-1', 'agent-2'],
      recipes: [
        { label: 'ramplus r=0.3', params: { ...defaultParams('ramplus', 2), r: 0.3 } },
        { label: 'ties density=0.7,0.3', params: { ...defaultParams('ties', 2), density: [0.7, 0.3] } },
      ],
    });
    call.resolve(RESULT);
    await run;
    expect(store.getState().studio.evaluation.scored).toEqual([
      { key: 'base', label: 'base', kind: 'base' },
      { key: 'agent-1', label: 'coder', kind: 'agent' },
      { key: 'candidate:ramplus r=0.3', label: 'ramplus r=0.3', kind: 'candidate' },
      { key: 'candidate:ties density=0.7,0.3', label: 'ties density=0.7,0.3', kind: 'candidate' },
    ]);

    store.getState().setOutDtype('F16');
    // The fake check found the models unmatched; matched, the merge starts.
    const { studio: before } = store.getState();
    const check = {
      ...before.check,
      result: { compat: { ok: true }, memory: { outputBytes: 0 } },
    } as typeof before.check;
    store.setState({ studio: { ...before, check } });
    // The fake's answer is no merge summary: the merge was asked for, which is what is checked.
    await store
      .getState()
      .writeCandidateMerge('ties density=0.7,0.3')
      .catch(() => null);
    const studio = store.getState().studio;
    expect(studio.params).toEqual({ ...defaultParams('ties', 2), density: [0.7, 0.3] });
    expect(studio.outDtype).toBeNull();
    expect(studio.evaluation.writtenCandidate).toBe('ties density=0.7,0.3');
    expect(fake.calls.find((c) => c.kind === 'merge')?.request).toMatchObject({
      params: { method: 'ties', density: [0.7, 0.3] },
    });

    store.getState().removeCandidateMerge('ramplus r=0.3');
    expect(store.getState().studio.evaluation.candidateMerges.map((c) => c.label)).toEqual([
      'ties density=0.7,0.3',
    ]);
    // One agent fewer: the candidate's per-agent densities no longer fit, and the run says so.
    await store.getState().removeAgent('agent-2');
    await store.getState().runEval();
    expect(store.getState().studio.evaluation.run.error?.message).toMatch(
      /^The candidate ties density=0\.7,0\.3 no longer fits these agents/,
    );
  });

  it('has every agent write its references, scored or not', async () => {
    const { fake, store } = await loaded();
    const s = store.getState();
    s.setEvalOptions({ mode: 'references', prompts: 'one\ntwo', referenceTokens: 5 });
    s.setEvalIncluded('agent-1', false);
    void s.runEval();
    expect(must(fake.held[0], 'the eval call').request.probes).toEqual({
      kind: 'references',
      prompts: ['one', 'two'],
      writers: [
        { target: { slot: 'agent-1' }, label: 'coder', path: 'coder' },
        { target: { slot: 'agent-2' }, label: 'writer', path: 'writer' },
      ],
      tokens: 5,
    });
  });

  it('ends a cancelled run as cancelled and a failed one with its error; an older run never writes', async () => {
    const { fake, store } = await loaded();
    const s = store.getState();
    const first = s.runEval();
    store.getState().cancelEval();
    await first;
    expect(store.getState().studio.evaluation.run).toMatchObject({ status: 'cancelled', error: null });

    const second = s.runEval();
    const third = s.runEval();
    // The second was cancelled by the third; the third fails.
    expect(must(fake.held[1], 'second').cancelled).toBe(true);
    must(fake.held[2], 'third').reject(
      Object.assign(new Error('probes.jsonl:2: not valid JSON'), { name: 'Error' }),
    );
    await Promise.all([second, third]);
    await flush();
    expect(store.getState().studio.evaluation.run).toMatchObject({
      status: 'error',
      error: { name: 'Error', message: 'probes.jsonl:2: not valid JSON' },
    });
  });

  it('refuses a run without a model, and generates side by side', async () => {
    const { fake, store } = await loaded();
    const s = store.getState();
    for (const key of ['base', 'agent-1', 'agent-2']) s.setEvalIncluded(key, false);
    await s.runEval();
    expect(store.getState().studio.evaluation.run.error?.message).toBe(
      'Choose at least one model to evaluate.',
    );
    expect(fake.held).toHaveLength(0);

    s.setEvalIncluded('base', true);
    s.setEvalOptions({ prompt: 'Hello' });
    const generation = s.runGenerate();
    const call = must(fake.held[0], 'the generate call');
    expect(call.kind).toBe('generate');
    expect(call.request).toMatchObject({ prompt: 'Hello', chat: false, maxNewTokens: 8 });
    call.resolve({ models: [{ label: 'base', path: 'base' }], texts: [' world'], ids: [[1]] });
    await generation;
    expect(store.getState().studio.evaluation.generation.result?.texts).toEqual([' world']);
  });
});

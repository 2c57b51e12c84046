// The studio slice's model loading against a fake engine whose answers arrive in an order the test
// chooses: per-slot requests, several agents at once, unique labels, rename and reorder.
import { describe, expect, it } from 'vitest';
import type { EngineClient, EngineJob } from '../worker/client.ts';
import type { WorkerCall, WorkerCalls } from '../worker/protocol.ts';
import type { ModelSummary } from '../driver/model-transfer.ts';
import { defaultParams } from '../methods/defaults.ts';
import type { MethodParams } from '../methods/types.ts';
import { at, must } from '../io/checked.ts';
import { createStudioStore } from './store.ts';
import { SMALL_QUOTA_BYTES, storageLooksPrivate, type StorageServices } from './studio-slice.ts';

interface Held {
  kind: WorkerCall;
  request: Record<string, unknown>;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

/** An engine whose open calls wait until the test answers them; other calls answer at once. */
function fakeEngine() {
  const held: Held[] = [];
  const calls: { kind: WorkerCall; request: Record<string, unknown> }[] = [];
  const engine: EngineClient = {
    call<K extends WorkerCall>(
      kind: K,
      request: WorkerCalls[K]['request'],
    ): EngineJob<WorkerCalls[K]['result']> {
      const fields = request as unknown as Record<string, unknown>;
      calls.push({ kind, request: fields });
      const promise = new Promise<WorkerCalls[K]['result']>((resolve, reject) => {
        if (kind === 'open')
          held.push({ kind, request: fields, resolve: resolve as (r: unknown) => void, reject });
        else if (kind === 'check')
          resolve({
            compat: { ok: true, issues: [], common: [], notes: [] },
            derivation: [],
            memory: { outputBytes: 0 },
          } as never);
        else if (kind === 'analyze') resolve({ agents: (fields.agents as string[]).length } as never);
        else resolve(null as never);
      });
      return { promise, cancel: () => undefined };
    },
    terminate: () => undefined,
  };
  /** Answers the held open of this slot (the oldest one still held). */
  const answer = async (slot: string, label = slot): Promise<void> => {
    const index = held.findIndex((h) => h.request.slot === slot);
    if (index < 0) throw new Error(`no open held for ${slot}`);
    const [call] = held.splice(index, 1);
    must(call, `the held open of ${slot}`).resolve({ label, tensors: [] } as unknown as ModelSummary);
    await new Promise((resolve) => setTimeout(resolve, 0));
  };
  return { engine, held, calls, answer };
}

function studioWith(engine: EngineClient, storage?: StorageServices) {
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
      storage,
    },
  });
}

const file = (name: string) => [{ name, blob: new Blob([name]) }];
const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('studio slice: loading models', () => {
  it('brings four agents added back to back to ready, whatever order their answers come in', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    const { loadFiles } = store.getState();
    const loads = [loadFiles('base', null, 'base', file('b'))];
    for (const name of ['a1', 'a2', 'a3', 'a4']) loads.push(loadFiles('agent', null, name, file(name)));
    const slots = store.getState().studio.models.map((m) => m.slot);
    expect(slots).toHaveLength(5);
    // Newest first: with one shared counter, every older answer used to be dropped.
    for (const slot of [...slots].reverse()) await fake.answer(slot);
    await Promise.all(loads);
    const { models, analysis, analysisLabels } = store.getState().studio;
    expect(models.map((m) => m.status)).toEqual(['ready', 'ready', 'ready', 'ready', 'ready']);
    expect(analysis.status).toBe('done');
    expect(analysisLabels).toEqual(['a1', 'a2', 'a3', 'a4']);
    const analyses = fake.calls.filter((c) => c.kind === 'analyze');
    expect(analyses.at(-1)?.request.agents).toEqual(slots.slice(1));
  });

  it('keeps the newest choice for a slot when an older answer arrives later', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    void store.getState().loadFiles('base', null, 'first', file('1'));
    void store.getState().loadFiles('base', null, 'second', file('2'));
    expect(fake.held).toHaveLength(2);
    // The second request answers first; the first, answered afterwards, must not count.
    const [older, newer] = fake.held.splice(0, 2);
    must(newer, 'the second open').resolve({ label: 'second' });
    await flush();
    must(older, 'the first open').reject(new Error('stale failure'));
    await flush();
    const base = at(store.getState().studio.models, 0, 'models');
    expect(base).toMatchObject({ label: 'second', status: 'ready', error: null });
  });

  it('adds each pick of a multi-folder choice as its own agent, with distinct labels', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    const done = store.getState().loadAgents([
      { label: 'ppo', files: file('x') },
      { label: 'ppo', files: file('y') },
      { label: 'a2c', files: file('z') },
    ]);
    const agents = store.getState().studio.models;
    expect(agents.map((m) => m.label)).toEqual(['ppo', 'ppo (2)', 'a2c']);
    expect(new Set(agents.map((m) => m.slot)).size).toBe(3);
    for (const m of agents) await fake.answer(m.slot);
    await done;
    expect(store.getState().studio.models.every((m) => m.status === 'ready')).toBe(true);
    expect(fake.held).toHaveLength(0);
    expect(store.getState().studio.params.weights).toHaveLength(3);
  });

  it('renames a model only to a free, non-empty name', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    void store.getState().loadAgents([
      { label: 'one', files: file('1') },
      { label: 'two', files: file('2') },
    ]);
    const first = at(store.getState().studio.models, 0, 'models');
    expect(store.getState().renameModel(first.slot, 'two')).toBe(false);
    expect(store.getState().renameModel(first.slot, '   ')).toBe(false);
    expect(store.getState().renameModel(first.slot, ' uno ')).toBe(true);
    expect(store.getState().studio.models.map((m) => m.label)).toEqual(['uno', 'two']);
  });

  it('moves an agent with its own weight and density', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    const done = store.getState().loadAgents([
      { label: 'p', files: file('p') },
      { label: 'q', files: file('q') },
      { label: 'r', files: file('r') },
    ]);
    for (const m of store.getState().studio.models) await fake.answer(m.slot);
    await done;
    store.getState().setMethod('ties');
    store.getState().setParams({ weights: [0.1, 0.2, 0.3], density: [0.4, 0.5, 0.6] });
    await store.getState().moveAgent(at(store.getState().studio.models, 0, 'models').slot, 1);
    const { models, params } = store.getState().studio;
    expect(models.map((m) => m.label)).toEqual(['q', 'p', 'r']);
    expect(params.weights).toEqual([0.2, 0.1, 0.3]);
    expect(params.density).toEqual([0.5, 0.4, 0.6]);
    expect(params.method).toBe(defaultParams('ties', 3).method);
    // Past either end, nothing moves.
    await store.getState().moveAgent(at(models, 0, 'models').slot, -1);
    expect(store.getState().studio.models.map((m) => m.label)).toEqual(['q', 'p', 'r']);
  });

  it("keeps Model Breadcrumbs' gamma per agent through moves, additions and removals", async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    const done = store.getState().loadAgents([
      { label: 'p', files: file('p') },
      { label: 'q', files: file('q') },
    ]);
    for (const m of store.getState().studio.models) await fake.answer(m.slot);
    await done;
    store.getState().setMethod('breadcrumbs');
    store.getState().setParams({ gamma: [0.02, 0.03] });
    await store.getState().moveAgent(at(store.getState().studio.models, 0, 'models').slot, 1);
    expect(store.getState().studio.params.gamma).toEqual([0.03, 0.02]);
    const added = store.getState().loadAgents([{ label: 'r', files: file('r') }]);
    const r = must(
      store.getState().studio.models.find((m) => m.label === 'r'),
      'agent r',
    );
    await fake.answer(r.slot);
    await added;
    expect(store.getState().studio.params.gamma).toEqual([0.03, 0.02, 0.01]);
    await store.getState().removeAgent(r.slot);
    expect(store.getState().studio.params.gamma).toEqual([0.03, 0.02]);
  });
});

describe('studio slice: a set of models', () => {
  /** A base and three agents, all ready (or agent `refused` refused), with the statistics run. */
  async function setStore(refused?: string) {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    const loads = [
      store.getState().loadFiles('base', null, 'base', file('b'), 'set/base'),
      store.getState().loadAgents(['a0', 'a1', 'a2'].map((label) => ({ label, files: file(label) }))),
    ];
    for (const m of store.getState().studio.models) {
      if (m.label !== refused) {
        await fake.answer(m.slot);
        continue;
      }
      const index = fake.held.findIndex((h) => h.request.slot === m.slot);
      fake.held.splice(index, 1)[0]?.reject(new Error(`${m.label} holds no .safetensors weights`));
      await flush();
    }
    await Promise.all(loads);
    return { fake, store };
  }

  it('keeps where a model was picked from, through a rename', async () => {
    const { store } = await setStore();
    expect(store.getState().renameModel('base', 'root')).toBe(true);
    expect(at(store.getState().studio.models, 0, 'models')).toMatchObject({
      label: 'root',
      origin: 'set/base',
    });
  });

  it('makes an agent the base: the old base takes its place and per-agent values, the worker swaps', async () => {
    const { fake, store } = await setStore();
    store.getState().setMethod('ties');
    store.getState().setParams({ weights: [0.1, 0.2, 0.3] });
    const a1 = must(
      store.getState().studio.models.find((m) => m.label === 'a1'),
      'agent a1',
    );
    await store.getState().makeBase(a1.slot);
    const { models, params, analysisLabels } = store.getState().studio;
    expect(models.map((m) => [m.role, m.label, m.slot])).toEqual([
      ['base', 'a1', 'base'],
      ['agent', 'a0', models[1]?.slot],
      ['agent', 'base', a1.slot],
      ['agent', 'a2', models[3]?.slot],
    ]);
    expect(fake.calls.find((c) => c.kind === 'swap')?.request).toEqual({ a: 'base', b: a1.slot });
    expect(params.weights).toEqual([0.1, 0.2, 0.3]);
    // The statistics run again over the new agents.
    expect(analysisLabels).toEqual(['a0', 'base', 'a2']);
    expect(fake.calls.filter((c) => c.kind === 'analyze').at(-1)?.request.base).toBe('base');
  });

  it('makes no base of a model still being read', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    void store.getState().loadFiles('base', null, 'base', file('b'));
    void store.getState().loadAgents([{ label: 'a', files: file('a') }]);
    const agent = must(
      store.getState().studio.models.find((m) => m.role === 'agent'),
      'agent',
    );
    await store.getState().makeBase(agent.slot);
    expect(fake.calls.some((c) => c.kind === 'swap')).toBe(false);
    expect(store.getState().studio.models.map((m) => m.role)).toEqual(['base', 'agent']);
  });

  it('starts empty: every model closed, nothing checked', async () => {
    const { fake, store } = await setStore();
    const slots = store.getState().studio.models.map((m) => m.slot);
    await store.getState().startEmpty();
    const { models, source, analysis, params } = store.getState().studio;
    expect(models).toEqual([]);
    expect(source).toBe('none');
    expect(analysis.status).toBe('idle');
    expect(params.weights ?? []).toHaveLength(0);
    const closed = fake.calls.filter((c) => c.kind === 'close').map((c) => c.request.slot);
    expect(closed.sort()).toEqual([...slots].sort());
  });

  it('runs the statistics and the merge without a refused agent, its per-agent values left out with it', async () => {
    const { fake, store } = await setStore('a1');
    const { models, analysis, analysisLabels } = store.getState().studio;
    expect(models.map((m) => m.status)).toEqual(['ready', 'ready', 'error', 'ready']);
    expect(analysis.status).toBe('done');
    expect(analysisLabels).toEqual(['a0', 'a2']);
    expect(fake.calls.filter((c) => c.kind === 'analyze').at(-1)?.request.agents).toHaveLength(2);
    store.getState().setMethod('ties');
    store.getState().setParams({ weights: [1, 2, 3], density: [0.3, 0.5, 0.7] });
    await store.getState().runMerge();
    const request = must(
      fake.calls.find((c) => c.kind === 'merge'),
      'a merge',
    ).request;
    const slots = models.filter((m) => m.role === 'agent' && m.label !== 'a1').map((m) => m.slot);
    expect(request.agents).toEqual(slots);
    expect(request.agentLabels).toEqual(['a0', 'a2']);
    expect((request.params as MethodParams).weights).toEqual([1, 3]);
    expect((request.params as MethodParams).density).toEqual([0.3, 0.7]);
    // The studio's own recipe keeps every agent's values, the refused one's too.
    expect(store.getState().studio.params.weights).toEqual([1, 2, 3]);
  });

  it('runs no statistics where no agent could be opened', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    const loads = [
      store.getState().loadFiles('base', null, 'base', file('b')),
      store.getState().loadFiles('agent', null, 'bad', file('x')),
    ];
    await fake.answer('base');
    fake.held.splice(0, 1)[0]?.reject(new Error('malformed'));
    await Promise.all(loads);
    await store.getState().runAnalysis();
    expect(store.getState().studio.analysis.error?.message).toBe(
      'No agent could be opened: choose other files for them.',
    );
  });
});

describe('studio slice: merges into OPFS', () => {
  async function readyStore(storage?: StorageServices) {
    const fake = fakeEngine();
    const store = studioWith(fake.engine, storage);
    const loading = [
      store.getState().loadFiles('base', null, 'base', file('b')),
      store.getState().loadFiles('agent', null, 'coder', file('c')),
    ];
    await flush();
    for (const held of [...fake.held]) await fake.answer(held.request.slot as string);
    await Promise.all(loading);
    return { fake, store };
  }

  it('hands the storage estimate to the worker and names each merge folder so that none collide', async () => {
    const storage: StorageServices = {
      estimate: async () => ({ usage: 123, quota: 4567 }),
      persisted: async () => true,
      persist: async () => true,
    };
    const { fake, store } = await readyStore(storage);
    await store.getState().runMerge();
    await store.getState().runMerge();
    const merges = fake.calls.filter((c) => c.kind === 'merge').map((c) => c.request);
    expect(merges).toHaveLength(2);
    expect(at(merges, 0, 'merges').storage).toEqual({ usage: 123, quota: 4567 });
    const folders = merges.map((m) => m.folder as string);
    for (const folder of folders)
      expect(folder).toMatch(/^ramplus-1-agent-\d{4}-\d{2}-\d{2}-\d+-[0-9a-f]{8}$/);
    expect(new Set(folders).size).toBe(2);
  });

  it('names the merge from the Name field (cleaned), its folder from the name, and an empty field means the default', async () => {
    const { fake, store } = await readyStore();
    store.getState().setMergeName('  My merge: v2\n');
    await store.getState().runMerge();
    store.getState().setMergeName('');
    expect(store.getState().studio.mergeName).toBeNull();
    await store.getState().runMerge();
    const [named, unnamed] = fake.calls.filter((c) => c.kind === 'merge').map((c) => c.request);
    expect(must(named, 'first merge').name).toBe('My merge: v2');
    expect(must(named, 'first merge').folder).toMatch(/^My-merge-v2-1-[0-9a-f]{8}$/);
    expect(must(unnamed, 'second merge').name).toMatch(/^ramplus-1-agent-\d{4}-\d{2}-\d{2}$/);
  });

  it('sends an imported recipe’s gradients and filters, in the loaded agents’ order, and its read dtype', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    const loading = [
      store.getState().loadFiles('base', null, 'base', file('b')),
      store.getState().loadFiles('agent', null, 'door', file('d')),
      store.getState().loadFiles('agent', null, 'key', file('k')),
    ];
    await flush();
    for (const held of [...fake.held]) await fake.answer(held.request.slot as string);
    await Promise.all(loading);
    const params = { ...defaultParams('ties', 2), weights: [1, 0.5], density: [1, 0.4] };
    // The recipe lists key first: it goes to the agent of its name.
    store.getState().applyRecipe(
      {
        base: 'org/base',
        agents: ['org/key', 'org/door'],
        params,
        outDtype: 'F16',
        readDtype: 'F16',
        gradients: {
          global: {},
          models: [{ density: [1, 0.5] }, { weight: [{ filter: 'mlp', value: 2 }, { value: 0 }] }],
        },
      },
      'yaml',
      ['int8_mask: no effect.'],
    );
    const { restored, gradients, params: applied } = store.getState().studio;
    expect(restored?.mapping?.map((r) => [r.recipe, r.loaded, r.by])).toEqual([
      ['org/key', 'key', 'name'],
      ['org/door', 'door', 'name'],
    ]);
    expect(restored?.unhonoured).toEqual(['int8_mask: no effect.']);
    expect(applied.density).toEqual([0.4, 1]);
    expect(gradients?.models).toEqual([
      { weight: [{ filter: 'mlp', value: 2 }, { value: 0 }] },
      { density: [1, 0.5] },
    ]);
    await store.getState().runMerge();
    const request = at(
      fake.calls.filter((c) => c.kind === 'merge'),
      0,
      'merges',
    ).request;
    expect(request.readDtype).toBe('F16');
    expect(request.settings).toEqual({
      global: {},
      models: [
        { weight: [{ filter: 'mlp', value: 2 }, { value: 0 }], density: 0.4 },
        { weight: 1, density: [1, 0.5] },
      ],
    });
    // A gradient moves with its agent, and one value replaces it only when asked.
    await store.getState().moveAgent(at(store.getState().studio.models, 1, 'models').slot, 1);
    expect(store.getState().studio.gradients?.models).toEqual([
      { density: [1, 0.5] },
      { weight: [{ filter: 'mlp', value: 2 }, { value: 0 }] },
    ]);
    store.getState().clearGradient('density', 0);
    expect(store.getState().studio.gradients?.models[0]).toEqual({});
    store.getState().clearGradient('weight', 1);
    expect(store.getState().studio.gradients).toBeNull();
  });

  it('sends the read precision ("compare at") with the statistics and the merge, counting again when it changes', async () => {
    const { fake, store } = await readyStore();
    const analyses = () => fake.calls.filter((c) => c.kind === 'analyze').map((c) => c.request);
    expect(analyses()).toHaveLength(1);
    expect(at(analyses(), 0, 'analyses')).not.toHaveProperty('readDtype');
    expect(at(analyses(), 0, 'analyses').labels).toEqual(['coder']);
    await store.getState().setReadDtype('BF16');
    expect(analyses()).toHaveLength(2);
    expect(at(analyses(), 1, 'analyses').readDtype).toBe('BF16');
    // The same choice again counts nothing again.
    await store.getState().setReadDtype('BF16');
    expect(analyses()).toHaveLength(2);
    await store.getState().runMerge();
    expect(fake.calls.find((c) => c.kind === 'merge')?.request.readDtype).toBe('BF16');
    // A recipe (a saved session, a link, YAML) brings its own, and the statistics follow it.
    store
      .getState()
      .applyRecipe(
        { base: null, agents: [], params: store.getState().studio.params, outDtype: null, readDtype: null },
        'yaml',
      );
    await flush();
    expect(store.getState().studio.readDtype).toBeNull();
    expect(analyses()).toHaveLength(3);
    expect(at(analyses(), 2, 'analyses')).not.toHaveProperty('readDtype');
  });

  it('sends no estimate where the browser has none, and a failing estimate is no estimate', async () => {
    const { fake, store } = await readyStore({
      estimate: () => Promise.reject(new Error('no quota')),
      persisted: async () => true,
      persist: async () => true,
    });
    await store.getState().runMerge();
    expect(
      must(
        fake.calls.find((c) => c.kind === 'merge'),
        'the merge call',
      ).request.storage,
    ).toBeUndefined();
  });

  it('takes a small quota for storage held in memory, and an unknown one for none', () => {
    expect(storageLooksPrivate(null)).toBe(false);
    expect(storageLooksPrivate({ usage: 0, quota: 0, persisted: false })).toBe(false);
    expect(storageLooksPrivate({ usage: 0, quota: 300 * 1024 ** 2, persisted: false })).toBe(true);
    expect(storageLooksPrivate({ usage: 0, quota: SMALL_QUOTA_BYTES, persisted: false })).toBe(false);
    expect(storageLooksPrivate({ usage: 0, quota: 10 * 1024 ** 3, persisted: false })).toBe(false);
  });
});

describe('studio slice: the memory budget', () => {
  it('tells the worker the budget and asks the check again for its memory figures, keeping the statistics', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    const loads = [
      store.getState().loadFiles('base', null, 'base', file('b')),
      store.getState().loadFiles('agent', null, 'a1', file('a1')),
    ];
    for (const m of store.getState().studio.models) await fake.answer(m.slot);
    await Promise.all(loads);
    expect(store.getState().studio.analysis.status).toBe('done');
    const before = fake.calls.length;
    await store.getState().setMemoryBudget(2 * 2 ** 30);
    expect(store.getState().studio.memoryBudget).toBe(2 * 2 ** 30);
    const after = fake.calls.slice(before);
    expect(after.map((c) => c.kind)).toEqual(['configure', 'check']);
    expect(after[0]?.request).toEqual({ memoryBudget: 2 * 2 ** 30 });
    expect(store.getState().studio.check.status).toBe('done');
    expect(store.getState().studio.analysis.status).toBe('done');
  });

  it('only tells the worker where no check has been made yet, and keeps the budget through the demo', async () => {
    const fake = fakeEngine();
    const store = studioWith(fake.engine);
    await store.getState().setMemoryBudget(2 ** 30);
    expect(fake.calls.map((c) => c.kind)).toEqual(['configure']);
    // Loading the demo starts the studio afresh but for the recipe and this machine's budget.
    void store.getState().loadDemo();
    expect(store.getState().studio.source).toBe('demo');
    expect(store.getState().studio.memoryBudget).toBe(2 ** 30);
  });
});

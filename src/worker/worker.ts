// The studio's engine host, run as a dedicated Web Worker: it takes the page's calls
// (worker-protocol.ts), runs each as a job with its own cancel signal and throttled progress, and
// posts plain data back. No GPU object and no weight byte ever reaches the page. The jobs live in
// their own modules: models (worker-models), device and memory (worker-device), output places
// (worker-storage), merges (worker-merge), comparisons (worker-compare).
import { lockDownNetwork } from './network-lockdown.ts';
import { evaluate, modelDemoTensors } from '../demo/arena.ts';
import type { DemoModelConfig } from '../demo/policy.ts';
import { compatColumns } from '../format/compat.ts';
import { describeAdapter } from '../engine/gpu/device.ts';
import { analyzeModels } from '../driver/driver.ts';
import { explainElement, InspectHost } from '../driver/tensor-view.ts';
import { listLibrary } from '../driver/library.ts';
import { runSelfTest } from './self-test.ts';
import { statsFiles } from '../driver/stats-json.ts';
import { precisionSummary } from '../driver/precision-stats.ts';
import { comparedNames, readPrecisionFacts } from '../driver/read-precision.ts';
import { must } from '../io/checked.ts';
import { compareModels } from './compare.ts';
import { evaluateModels, generateSideBySide } from './eval.ts';
import {
  acquireDevice,
  engineInfo,
  estimateMemory,
  releaseEngine,
  setMemoryBudget,
  withEngine,
} from './engines.ts';
import { errorInfo, refusal } from './errors.ts';
import { breakNextHashWorker, copy, merge, readBack, setOverlap, type JobContext } from './merge.ts';
import { loadWasmSha256 } from '../io/sha256.ts';
import {
  adapterNotes,
  agentModels,
  closeSlot,
  swapSlots,
  derivationSample,
  model,
  openSlot,
  openTarget,
  recalledAnalysis,
  rememberAnalysis,
  holdReads,
} from './models.ts';
import {
  DEMO_MODEL_TYPE,
  type DerivationReport,
  type JobProgress,
  type ProgressOf,
  type WorkerCall,
  type WorkerCalls,
  type WorkerReply,
  type WorkerRequest,
} from './protocol.ts';
import { deleteMerge, mergesRoot } from './storage.ts';

// First: no network primitive stays usable in this worker (src/worker/network-lockdown.ts).
const ownOriginFetch = lockDownNetwork(self as unknown as Parameters<typeof lockDownNetwork>[0]);

// Compiled once, while the page loads its models: every job hashes with it (merges, read-backs,
// statistics headers), or in JavaScript where the page's policy forbids WebAssembly.
const hashReady = loadWasmSha256();

const jobs = new Map<number, AbortController>();
const inspectHost = new InspectHost();

function reply(message: WorkerReply): void {
  postMessage(message);
}

/** A job's cancel signal and its progress, of the kind its call posts (ProgressOf). */
interface CallContext<P> extends Omit<JobContext, 'progress'> {
  progress: (progress: P) => void;
}

type Handlers = {
  [K in WorkerCall]: (
    request: WorkerCalls[K]['request'],
    context: CallContext<ProgressOf<K>>,
  ) => Promise<WorkerCalls[K]['result']>;
};

const handlers: Handlers = {
  open: ({ slot, label, files }) => openSlot(slot, label, files, (url) => ownOriginFetch(url)),
  async close({ slot }) {
    closeSlot(slot);
    return null;
  },
  async swap({ a, b }) {
    swapSlots(a, b);
    return null;
  },
  async check({ base, agents }, { signal }) {
    const baseModel = model(base);
    const agentList = await agentModels(baseModel, agents);
    const compat = compatColumns(baseModel, agentList);
    const engine = await engineInfo();
    // A sample that cannot be read (a truncated file) is reported for that agent alone.
    const derivation = await Promise.all(
      agents.map(async (slot, t): Promise<DerivationReport> => {
        try {
          return { slot, sample: await derivationSample(baseModel, must(agentList[t], slot), signal) };
        } catch (error) {
          return { slot, error: errorInfo(error) };
        }
      }),
    );
    return {
      compat,
      engine,
      memory: estimateMemory(baseModel, compat, agents.length, engine.limits),
      derivation,
      adapterNotes: await adapterNotes(baseModel, agents),
      precision: readPrecisionFacts(baseModel, agentList, comparedNames(baseModel, agentList)),
    };
  },
  async analyze({ base, agents, epsilon, readDtype, labels }, { signal, progress }) {
    return withEngine(agents.length, async (engine) => {
      const baseModel = model(base);
      const job = {
        base: baseModel,
        agents: await agentModels(baseModel, agents),
        engine,
        epsilon,
        signal,
        ...(readDtype ? { readDtype } : {}),
      };
      const result = await analyzeModels({ ...job, onProgress: progress });
      // What reading at D did, as `analyze` says it: its lines and its JSON block.
      const precision = await precisionSummary(job, result, labels ?? agents);
      // The files' identities let an exported JSON serve `merge --stats-in` as analyze's does.
      const files = await statsFiles([job.base, ...job.agents]);
      rememberAnalysis(base, agents, epsilon, readDtype, result);
      return { ...result, files, ...(precision ? { precision } : {}) };
    });
  },
  merge,
  copy,
  readBack,
  async arena({ target, episodes }) {
    const subject = await openTarget(target);
    if (subject.config?.model_type !== DEMO_MODEL_TYPE)
      throw new Error(
        `${subject.name} is not of the demo architecture (config.json model_type is not ${DEMO_MODEL_TYPE}), so the arena cannot play it.`,
      );
    const result = evaluate(
      await modelDemoTensors(subject),
      subject.config as unknown as DemoModelConfig,
      episodes === undefined ? {} : { episodes },
    );
    return { tasks: result.tasks.map((t) => ({ ...t })), mean: result.mean };
  },
  async compare({ a, b }, { signal }) {
    return compareModels(await openTarget(a), await openTarget(b), signal);
  },
  async library() {
    return listLibrary(await mergesRoot());
  },
  async deleteMerge({ folder }) {
    await deleteMerge(folder);
    return null;
  },
  eval: evaluateModels,
  generate: generateSideBySide,
  async configure({ memoryBudget, holdReads: hold, overlap, breakHashWorker, releaseEngine: release }) {
    if (memoryBudget !== undefined) setMemoryBudget(memoryBudget);
    if (release) releaseEngine();
    if (hold !== undefined) holdReads(hold);
    if (overlap !== undefined) setOverlap(overlap);
    if (breakHashWorker) breakNextHashWorker();
    return null;
  },
  async selfTest() {
    const found = await acquireDevice();
    if ('error' in found) throw new Error(`The engine has no GPU device: ${found.error}.`);
    return runSelfTest(found.device, describeAdapter(found.adapterInfo));
  },
  async maskCanvas({ canvas }) {
    inspectHost.attach(canvas);
    return null;
  },
  async maskView(call, { signal }) {
    const found = await acquireDevice();
    if ('error' in found)
      throw refusal('NoWebGPU', `The tensor view draws on WebGPU, which this worker lacks: ${found.error}.`);
    const baseModel = model(call.base);
    return inspectHost.maskView(
      found.device,
      baseModel,
      await agentModels(baseModel, call.agents),
      call,
      signal,
    );
  },
  async explain({ base, agents, params, outDtype, tensor, index }, { signal }) {
    const baseModel = model(base);
    const agentList = await agentModels(baseModel, agents);
    return withEngine(agents.length, (engine) =>
      explainElement({
        base: baseModel,
        agents: agentList,
        engine,
        params,
        outDtype,
        tensor,
        index,
        analysis: recalledAnalysis(base, agents, params.epsilon, undefined),
        signal,
      }),
    );
  },
};

async function run(request: Exclude<WorkerRequest, { kind: 'cancel' }>): Promise<void> {
  const controller = new AbortController();
  jobs.set(request.id, controller);
  const { kind, id, ...fields } = request;
  try {
    await hashReady;
    const handler = handlers[kind] as (
      request: typeof fields,
      context: CallContext<JobProgress>,
    ) => Promise<unknown>;
    const result = await handler(fields, {
      signal: controller.signal,
      progress: (progress) => reply({ kind: 'progress', id, progress }),
    });
    reply({ kind: 'done', id, result });
  } catch (error) {
    reply({ kind: 'error', id, error: errorInfo(error) });
  } finally {
    jobs.delete(id);
  }
}

addEventListener('message', (event: MessageEvent<WorkerRequest>) => {
  const request = event.data;
  if (request.kind === 'cancel') jobs.get(request.id)?.abort();
  else void run(request);
});

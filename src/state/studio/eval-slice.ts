// The Evaluate step of the studio (issue 34): probe files or the agents' own completions, the options,
// which models are scored (the loaded models, this session's merges, the library's), candidate merges
// scored beside them without being written (and the one picked written by the Merge step), and the
// evaluation and side-by-side generation jobs, run by the engine worker (src/worker/eval.ts).
import type { StateCreator } from 'zustand';
import type { EngineJob } from '../../worker/client.ts';
import { copyParams, validateParams } from '../../methods/defaults.ts';
import type {
  ArenaTarget,
  EvalCandidates,
  EvalTarget,
  WorkerCall,
  WorkerCalls,
} from '../../worker/protocol.ts';
import { candidateLabel } from './candidates.ts';
import { asInfo, isAbort, type StudioContext } from './context.ts';
import {
  mergeInputs,
  mergeKey,
  type EvalActions,
  type EvalCandidate,
  type EvalData,
  type EvalTask,
  type StudioData,
  type StudioSlice,
} from './types.ts';

const OPFS_PREFIX = 'opfs:';
const PICKED_PREFIX = 'picked:';

/**
 * What the Evaluate step can score: the ready models (base first), this session's merges, then the
 * library's complete merges not among them; every label distinct, so a probe set names one model.
 */
export function evalCandidates(data: StudioData): EvalCandidate[] {
  const out: EvalCandidate[] = data.models
    .filter((m) => m.status === 'ready')
    .map((m) => ({ key: m.slot, label: m.label, kind: m.role }));
  const taken = new Set(out.map((c) => c.label));
  const unique = (label: string): string => {
    let name = label;
    for (let n = 2; taken.has(name); n++) name = `${label} (${n})`;
    taken.add(name);
    return name;
  };
  for (const m of data.merges)
    out.push({ key: mergeKey(m), label: unique(`merge ${m.id} (${m.params.method})`), kind: 'merge' });
  for (const entry of data.library.result ?? []) {
    const key = `${OPFS_PREFIX}${entry.folder}`;
    if (entry.status === 'complete' && !out.some((c) => c.key === key))
      out.push({ key, label: unique(entry.folder), kind: 'merge' });
  }
  return out;
}

/** The candidates the next run scores: all but those left out. */
export function chosenCandidates(data: StudioData): EvalCandidate[] {
  return evalCandidates(data).filter((c) => !data.evaluation.excluded.includes(c.key));
}

/**
 * The candidate merges of the next run, for the loaded base and agents; a message where they cannot
 * run (no base or agents, or a candidate made for another number of agents).
 */
export function candidateRequest(data: StudioData): EvalCandidates | { blocked: string } | null {
  const recipes = data.evaluation.candidateMerges;
  if (recipes.length === 0) return null;
  const inputs = mergeInputs(data);
  if ('blocked' in inputs) return { blocked: `Candidate merges: ${inputs.blocked}` };
  for (const { label, params } of recipes) {
    const problems = validateParams(params, inputs.agents.length);
    if (problems.length)
      return { blocked: `The candidate ${label} no longer fits these agents (${problems[0]}): remove it.` };
  }
  return {
    base: inputs.base.slot,
    agents: inputs.agents.map((a) => a.slot),
    recipes: recipes.map(({ label, params }) => ({ label, params })),
  };
}

type EvalCall = 'eval' | 'generate';
type EvalTaskKey = 'run' | 'generation';

export function createEvalSlice(ctx: StudioContext): StateCreator<StudioSlice, [], [], EvalActions> {
  return (_set, get) => {
    const { services, patch, pickedFolders, agentCount } = ctx;
    const jobs: Record<EvalTaskKey, EngineJob<unknown> | null> = { run: null, generation: null };

    const patchEval = (changes: Partial<EvalData>): void =>
      patch({ evaluation: { ...get().studio.evaluation, ...changes } });
    const patchTask = (key: EvalTaskKey, changes: Partial<EvalTask<never>>): void =>
      patchEval({ [key]: { ...get().studio.evaluation[key], ...changes } });

    /** Where the worker finds a candidate; null for a picked folder this page no longer holds. */
    function evalTarget(candidate: EvalCandidate): EvalTarget | null {
      const { key, label } = candidate;
      let target: ArenaTarget;
      let path = label;
      if (key.startsWith(OPFS_PREFIX)) {
        const folder = key.slice(OPFS_PREFIX.length);
        target = { folder };
        path = `merges/${folder}`;
      } else if (key.startsWith(PICKED_PREFIX)) {
        const handle = pickedFolders.get(Number(key.slice(PICKED_PREFIX.length)));
        if (!handle) return null;
        target = { handle };
        path = handle.name;
      } else target = { slot: key };
      return { target, label, path };
    }

    /** The chosen candidates the worker can reach, with their targets. */
    function chosen(): { scored: EvalCandidate[]; targets: EvalTarget[] } {
      const scored: EvalCandidate[] = [];
      const targets: EvalTarget[] = [];
      for (const candidate of chosenCandidates(get().studio)) {
        const target = evalTarget(candidate);
        if (!target) continue;
        scored.push(candidate);
        targets.push(target);
      }
      return { scored, targets };
    }

    /** Runs one job of `call` as the task `key`: the newest job of a task alone writes its state. */
    async function runJob<K extends EvalCall>(
      key: EvalTaskKey,
      call: K,
      request: WorkerCalls[K]['request'],
    ): Promise<void> {
      jobs[key]?.cancel();
      patchEval({ [key]: { status: 'running', progress: null, error: null, result: null } });
      const job = services.engine.call(call as WorkerCall, request as never, (progress) => {
        if (jobs[key] === job) patchTask(key, { progress: progress as EvalTask<never>['progress'] });
      });
      jobs[key] = job;
      try {
        const result = await job.promise;
        if (jobs[key] === job) patchTask(key, { status: 'done', progress: null, result: result as never });
      } catch (error) {
        const info = asInfo(error);
        if (jobs[key] === job)
          patchTask(key, {
            status: isAbort(info) ? 'cancelled' : 'error',
            progress: null,
            error: isAbort(info) ? null : info,
          });
      } finally {
        if (jobs[key] === job) jobs[key] = null;
      }
    }

    const refuse = (key: EvalTaskKey, message: string): void =>
      patchEval({
        [key]: { status: 'error', progress: null, error: { name: 'NotReady', message }, result: null },
      });

    return {
      setEvalOptions(changes) {
        patchEval(changes);
      },

      addProbeFiles(files) {
        const names = new Set(files.map((f) => f.name));
        const kept = get().studio.evaluation.probeFiles.filter((f) => !names.has(f.name));
        patchEval({ probeFiles: [...kept, ...files] });
      },

      removeProbeFile(name) {
        patchEval({ probeFiles: get().studio.evaluation.probeFiles.filter((f) => f.name !== name) });
      },

      setEvalIncluded(key, included) {
        const others = get().studio.evaluation.excluded.filter((k) => k !== key);
        patchEval({ excluded: included ? others : [...others, key] });
      },

      addCandidateMerge(params) {
        const agents = agentCount();
        if (agents === 0) return 'Load the base and the agents first.';
        const problems = validateParams(params, agents);
        if (problems.length) return problems.join('; ');
        const label = candidateLabel(params, agents);
        const ev = get().studio.evaluation;
        if (ev.candidateMerges.some((c) => c.label === label))
          return `${label} is among the candidates already.`;
        patchEval({ candidateMerges: [...ev.candidateMerges, { label, params: copyParams(params) }] });
        return null;
      },

      removeCandidateMerge(label) {
        const ev = get().studio.evaluation;
        patchEval({ candidateMerges: ev.candidateMerges.filter((c) => c.label !== label) });
      },

      async writeCandidateMerge(label) {
        const candidate = get().studio.evaluation.candidateMerges.find((c) => c.label === label);
        if (!candidate) return null;
        // Scored with each tensor in its own dtype: written the same way, it is the merge that was scored.
        // The candidate's scalars everywhere (no gradient) and each tensor read as stored, as it was scored.
        patch({ params: copyParams(candidate.params), outDtype: null, gradients: null, readDtype: null });
        patchEval({ writtenCandidate: label });
        return get().runMerge();
      },

      async runEval() {
        const { scored, targets } = chosen();
        const ev = get().studio.evaluation;
        const candidates = candidateRequest(get().studio);
        if (candidates && 'blocked' in candidates) return refuse('run', candidates.blocked);
        if (targets.length === 0 && !candidates)
          return refuse('run', 'Choose at least one model to evaluate.');
        // The agents write the reference completions whether or not they are scored.
        const writers = evalCandidates(get().studio)
          .filter((c) => c.kind === 'agent')
          .flatMap((c) => evalTarget(c) ?? []);
        const merged = (candidates?.recipes ?? []).map(({ label }): EvalCandidate => ({
          key: `candidate:${label}`,
          label,
          kind: 'candidate',
        }));
        patchEval({ scored: [...scored, ...merged] });
        await runJob('run', 'eval', {
          ...(candidates ? { candidates } : {}),
          models: targets,
          probes:
            ev.mode === 'files'
              ? { kind: 'files', files: ev.probeFiles }
              : { kind: 'references', prompts: ev.prompts.split('\n'), writers, tokens: ev.referenceTokens },
          chat: ev.chat,
          maxNewTokens: ev.maxNewTokens,
        });
      },

      cancelEval() {
        jobs.run?.cancel();
      },

      async runGenerate() {
        const { targets } = chosen();
        const ev = get().studio.evaluation;
        if (targets.length === 0) return refuse('generation', 'Choose at least one model to evaluate.');
        await runJob('generation', 'generate', {
          models: targets,
          prompt: ev.prompt,
          chat: ev.chat,
          maxNewTokens: ev.maxNewTokens,
        });
      },

      cancelGenerate() {
        jobs.generation?.cancel();
      },
    };
  };
}

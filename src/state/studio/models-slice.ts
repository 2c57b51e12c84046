// The models part of the studio: loading the base and the agents (header-only preflight in the
// engine worker), their order and names, the compatibility check and the statistics pass over them.
import type { StateCreator } from 'zustand';
import type { AnalysisResult } from '../../driver/job.ts';
import type { DemoSet, EngineJob } from '../../worker/client.ts';
import type { FileRef } from '../../worker/protocol.ts';
import { at } from '../../io/checked.ts';
import { asInfo, isAbort, type StudioContext } from './context.ts';
import { fitParams, swapAgents, swapGradients, swapped } from './recipe-slice.ts';
import {
  checkRequest,
  idleTask,
  initialStudioData,
  type ModelActions,
  type StudioModel,
  type StudioSlice,
  statsInputs,
} from './types.ts';

export function createModelsSlice(ctx: StudioContext): StateCreator<StudioSlice, [], [], ModelActions> {
  return (_set, get) => {
    const { services, patch, patchTask, patchModel, agentCount } = ctx;
    // The newest open request per slot: a slot's answer counts only if no newer one was made for it.
    const requests = new Map<string, number>();
    let nextAgent = 1;
    let analysisJob: EngineJob<AnalysisResult> | null = null;

    async function open(slot: string, label: string, files: FileRef[]): Promise<void> {
      // Per slot: only the newest request for a slot may answer, whatever other slots do meanwhile.
      const mine = (requests.get(slot) ?? 0) + 1;
      requests.set(slot, mine);
      const current = (): boolean => requests.get(slot) === mine;
      const sent = performance.now();
      try {
        const report = await services.engine.call('open', { slot, label, files }).promise;
        // Pick to reply (read, parse, summary, transfer): e2e/inputs.spec.ts reads it for the 300k header.
        performance.measure('merge-studio:open', { start: sent });
        if (current()) patchModel(slot, { status: 'ready', report, error: null });
      } catch (error) {
        if (current()) patchModel(slot, { status: 'error', report: null, error: asInfo(error) });
      }
    }

    /** The label itself when no other model has it, else the label with the first free " (n)". */
    function uniqueLabel(label: string, except?: string): string {
      const taken = new Set(
        get()
          .studio.models.filter((m) => m.slot !== except)
          .map((m) => m.label),
      );
      if (!taken.has(label)) return label;
      let n = 2;
      while (taken.has(`${label} (${n})`)) n++;
      return `${label} (${n})`;
    }

    /** Puts models into the list (replacing those with the same slot), the base first. */
    function placeModels(entries: StudioModel[]): void {
      let next = get().studio.models;
      for (const entry of entries) {
        const exists = next.some((m) => m.slot === entry.slot);
        next = exists ? next.map((m) => (m.slot === entry.slot ? entry : m)) : [...next, entry];
      }
      next = [...next].sort((a, b) => (a.role === b.role ? 0 : a.role === 'base' ? -1 : 1));
      patch({ models: next, source: 'files' });
      patch({ params: fitParams(get().studio.params, agentCount()) });
    }

    /** After any change of models: check compatibility, then run the statistics pass if they match. */
    async function refresh(): Promise<void> {
      const mine = ctx.generation;
      analysisJob?.cancel();
      patch({ check: idleTask(), analysis: idleTask() });
      const data = get().studio;
      const request = checkRequest(data);
      if (!request || data.models.some((m) => m.status === 'loading')) return;
      patchTask('check', { status: 'running' });
      const sent = performance.now();
      try {
        const report = await services.engine.call('check', request).promise;
        performance.measure('merge-studio:check', { start: sent });
        if (mine !== ctx.generation) return;
        patchTask('check', { status: 'done', result: report });
        if (report.compat.ok && !('blocked' in statsInputs(get().studio))) await get().runAnalysis();
      } catch (error) {
        if (mine === ctx.generation) patchTask('check', { status: 'error', error: asInfo(error) });
      }
    }

    return {
      async loadDemo() {
        ctx.generation++;
        const mine = ctx.generation;
        const slots = get().studio.models.map((m) => m.slot);
        patch({
          ...initialStudioData(),
          merges: get().studio.merges,
          readBack: get().studio.readBack,
          library: get().studio.library,
          storage: get().studio.storage,
          persistAsked: get().studio.persistAsked,
          deleteErrors: get().studio.deleteErrors,
          restored: get().studio.restored,
          recipeProblem: get().studio.recipeProblem,
          comparison: get().studio.comparison,
          // The recipe stays: a restored or chosen method applies to the demo too.
          params: get().studio.params,
          outDtype: get().studio.outDtype,
          readDtype: get().studio.readDtype,
          memoryBudget: get().studio.memoryBudget,
          source: 'demo',
        });
        await Promise.all(
          slots.map((slot) => services.engine.call('close', { slot }).promise.catch(() => null)),
        );
        let demo: DemoSet;
        try {
          demo = await services.demo();
        } catch (error) {
          patchTask('check', { status: 'error', error: asInfo(error) });
          return;
        }
        if (mine !== ctx.generation) return;
        const entries = [
          { slot: 'base', role: 'base' as const, ref: demo.base },
          ...demo.agents.map((ref) => ({ slot: `agent-${nextAgent++}`, role: 'agent' as const, ref })),
        ];
        patch({
          models: entries.map((e) => ({
            slot: e.slot,
            role: e.role,
            label: e.ref.label,
            status: 'loading',
            report: null,
            error: null,
          })),
          params: fitParams(get().studio.params, demo.agents.length),
        });
        await Promise.all(entries.map((e) => open(e.slot, e.ref.label, e.ref.files)));
        if (mine === ctx.generation) await refresh();
      },

      async loadFiles(role, slot, label, files, origin) {
        ctx.generation++;
        const target = role === 'base' ? 'base' : (slot ?? `agent-${nextAgent++}`);
        const entry: StudioModel = {
          slot: target,
          role,
          label: uniqueLabel(label, target),
          ...(origin !== undefined && { origin }),
          status: 'loading',
          report: null,
          error: null,
        };
        placeModels([entry]);
        await open(target, entry.label, files);
        await refresh();
      },

      async loadAgents(picks) {
        if (picks.length === 0) return;
        ctx.generation++;
        const entries: StudioModel[] = [];
        for (const pick of picks) {
          const entry: StudioModel = {
            slot: `agent-${nextAgent++}`,
            role: 'agent',
            label: uniqueLabel(pick.label),
            ...(pick.origin !== undefined && { origin: pick.origin }),
            status: 'loading',
            report: null,
            error: null,
          };
          // Placed one by one, so that two picks of one name get distinct labels.
          placeModels([entry]);
          entries.push(entry);
        }
        await Promise.all(entries.map((e, i) => open(e.slot, e.label, at(picks, i, 'agent picks').files)));
        await refresh();
      },

      async removeAgent(slot) {
        ctx.generation++;
        requests.delete(slot);
        patch({ models: get().studio.models.filter((m) => m.slot !== slot) });
        patch({ params: fitParams(get().studio.params, agentCount()) });
        await services.engine.call('close', { slot }).promise.catch(() => null);
        await refresh();
      },

      async startEmpty() {
        ctx.generation++;
        analysisJob?.cancel();
        const slots = get().studio.models.map((m) => m.slot);
        requests.clear();
        patch({
          models: [],
          source: 'none',
          check: idleTask(),
          analysis: idleTask(),
          analysisLabels: [],
          params: fitParams(get().studio.params, 0),
        });
        await Promise.all(
          slots.map((slot) => services.engine.call('close', { slot }).promise.catch(() => null)),
        );
      },

      async makeBase(slot) {
        const models = get().studio.models;
        const agent = models.find((m) => m.slot === slot && m.role === 'agent');
        const base = models.find((m) => m.role === 'base');
        if (!agent || [agent, base].some((m) => m?.status === 'loading')) return;
        ctx.generation++;
        requests.delete(slot);
        requests.delete('base');
        await services.engine.call('swap', { a: 'base', b: slot }).promise;
        // The old base takes the agent's place in the order (and its per-agent values); no base, no agent.
        const next = get().studio.models.flatMap((m): StudioModel[] => {
          if (m.slot === slot) return base ? [{ ...base, slot, role: 'agent' }] : [];
          if (m.role === 'base') return [];
          return [m];
        });
        patch({ models: [{ ...agent, slot: 'base', role: 'base' }, ...next], source: 'files' });
        patch({ params: fitParams(get().studio.params, agentCount()) });
        await refresh();
      },

      renameModel(slot, label) {
        const name = label.trim();
        const models = get().studio.models;
        if (name === '' || models.some((m) => m.slot !== slot && m.label === name)) return false;
        const old = models.find((m) => m.slot === slot);
        if (!old) return false;
        patch({ models: models.map((m) => (m.slot === slot ? { ...m, label: name } : m)) });
        // The statistics' labels follow, so their tables keep naming the same agents.
        patch({ analysisLabels: get().studio.analysisLabels.map((l) => (l === old.label ? name : l)) });
        return true;
      },

      async moveAgent(slot, delta) {
        const models = get().studio.models;
        const base = models.filter((m) => m.role === 'base');
        const agents = models.filter((m) => m.role === 'agent');
        const from = agents.findIndex((m) => m.slot === slot);
        const to = from + delta;
        if (from < 0 || to < 0 || to >= agents.length) return;
        const moved = swapped(agents, from, to);
        ctx.generation++;
        // Every per-agent value moves with its agent.
        patch({
          models: [...base, ...moved],
          params: swapAgents(get().studio.params, from, to),
          gradients: swapGradients(get().studio.gradients, from, to),
        });
        // The statistics' per-agent arrays are in the old order: run them again.
        await refresh();
      },

      async runAnalysis() {
        const inputs = statsInputs(get().studio);
        if ('blocked' in inputs) {
          patchTask('analysis', { status: 'error', error: { name: 'NotReady', message: inputs.blocked } });
          return;
        }
        const mine = ctx.generation;
        analysisJob?.cancel();
        const { epsilon } = get().studio.params;
        const readDtype = get().studio.readDtype;
        patch({
          analysis: { status: 'running', progress: null, error: null, result: null },
          analysisLabels: inputs.agents.map((a) => a.label),
        });
        const job = services.engine.call(
          'analyze',
          {
            base: inputs.base.slot,
            agents: inputs.agents.map((a) => a.slot),
            epsilon,
            labels: inputs.agents.map((a) => a.label),
            ...(readDtype ? { readDtype } : {}),
          },
          (progress) => {
            if (mine === ctx.generation && analysisJob === job) patchTask('analysis', { progress });
          },
        );
        analysisJob = job;
        try {
          const result = await job.promise;
          if (mine === ctx.generation) patchTask('analysis', { status: 'done', result });
        } catch (error) {
          const info = asInfo(error);
          if (mine === ctx.generation && analysisJob === job)
            patchTask('analysis', {
              status: isAbort(info) ? 'cancelled' : 'error',
              error: isAbort(info) ? null : info,
            });
        } finally {
          if (analysisJob === job) analysisJob = null;
        }
      },

      cancelAnalysis() {
        analysisJob?.cancel();
      },
    };
  };
}

// The settings part of the studio: the engine worker's settings and the memory budget of its jobs.
import type { StateCreator } from 'zustand';
import type { StudioContext } from './context.ts';
import { checkRequest, type SettingsActions, type StudioSlice } from './types.ts';

export function createSettingsSlice(ctx: StudioContext): StateCreator<StudioSlice, [], [], SettingsActions> {
  return (_set, get) => {
    const { services, patch, patchTask } = ctx;
    return {
      async configureWorker(settings) {
        await services.engine.call('configure', settings).promise;
      },

      async setMemoryBudget(bytes) {
        patch({ memoryBudget: bytes });
        await services.engine.call('configure', { memoryBudget: bytes }).promise;
        // Only the memory estimate depends on the budget: the check is asked again, the statistics kept.
        const request = checkRequest(get().studio);
        if (get().studio.check.status !== 'done' || !request) return;
        const mine = ctx.generation;
        const report = await services.engine.call('check', request).promise;
        if (mine === ctx.generation && get().studio.check.status === 'done')
          patchTask('check', { result: report });
      },
    };
  };
}

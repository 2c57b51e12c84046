// The library part of the studio: the merge folders in OPFS with the storage estimate, deleting one,
// and the element-by-element comparison of two merges.
import type { StateCreator } from 'zustand';
import type { ArenaTarget, CompareReport } from '../../worker/protocol.ts';
import { asInfo, type StudioContext } from './context.ts';
import { idleTask, type LibraryActions, type StudioSlice } from './types.ts';

export function createLibrarySlice(ctx: StudioContext): StateCreator<StudioSlice, [], [], LibraryActions> {
  return (_set, get) => {
    const { services, patch, patchTask, pickedFolders } = ctx;
    return {
      async compareMerges(a, b) {
        const target = (key: string): ArenaTarget | null => {
          if (key.startsWith('opfs:')) return { folder: key.slice('opfs:'.length) };
          const handle = pickedFolders.get(Number(key.slice('picked:'.length)));
          return handle ? { handle } : null;
        };
        const [ta, tb] = [target(a), target(b)];
        const pair: [string, string] = [a, b];
        if (!ta || !tb) {
          patch({
            comparison: {
              ...idleTask<CompareReport>(),
              status: 'error',
              error: { name: 'NotFound', message: 'One of the two merges is no longer available.' },
              pair,
            },
          });
          return;
        }
        patch({ comparison: { ...idleTask<CompareReport>(), status: 'running', pair } });
        try {
          const result = await services.engine.call('compare', { a: ta, b: tb }).promise;
          if (get().studio.comparison.pair === pair) patchTask('comparison', { status: 'done', result });
        } catch (error) {
          if (get().studio.comparison.pair === pair)
            patchTask('comparison', { status: 'error', error: asInfo(error) });
        }
      },

      async refreshLibrary() {
        const previous = get().studio.library.result;
        patch({ library: { status: 'running', progress: null, error: null, result: previous } });
        const storage = services.storage;
        const [listed, estimate, persisted] = await Promise.allSettled([
          services.engine.call('library', {}).promise,
          storage?.estimate() ?? Promise.reject(new Error('no storage manager')),
          storage?.persisted() ?? Promise.resolve(false),
        ]);
        if (listed.status === 'fulfilled')
          patch({ library: { status: 'done', progress: null, error: null, result: listed.value } });
        else
          patch({
            library: { status: 'error', progress: null, error: asInfo(listed.reason), result: previous },
          });
        if (estimate.status === 'fulfilled')
          patch({
            storage: {
              usage: estimate.value.usage ?? 0,
              quota: estimate.value.quota ?? 0,
              persisted: persisted.status === 'fulfilled' && persisted.value,
            },
          });
      },

      async saveFolder(folder, target) {
        const done = (text: string): void =>
          patch({ savedFolders: { ...get().studio.savedFolders, [folder]: text } });
        try {
          const names = await services.engine.call('copy', { folder, target }).promise;
          done(`Saved ${names.length} files to ${target.name}.`);
        } catch (error) {
          done(`Saving failed: ${asInfo(error).message}`);
        }
      },

      async deleteMerge(folder) {
        const { [folder]: _dropped, ...others } = get().studio.deleteErrors;
        patch({ deleteErrors: others });
        try {
          await services.engine.call('deleteMerge', { folder }).promise;
        } catch (error) {
          patch({ deleteErrors: { ...get().studio.deleteErrors, [folder]: asInfo(error).message } });
          return;
        }
        // The session's record of it goes too: its files are gone.
        const gone = get().studio.merges.filter((m) => m.location === 'opfs' && m.folder === folder);
        patch({
          merges: get().studio.merges.filter((m) => !gone.includes(m)),
          library: {
            ...get().studio.library,
            result: (get().studio.library.result ?? []).filter((e) => e.folder !== folder),
          },
        });
        await get().refreshLibrary();
      },
    };
  };
}

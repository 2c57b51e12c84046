// The `studio` slice: the models loaded (with their header-only preflight), the compatibility check,
// the statistics, the recipe, the merge job and its results, arena scores, the library and the evaluation, all as
// plain data under `studio`; its actions drive the engine worker through an injected client. Composed
// of one slice per concern in studio/ (zustand's slices pattern), sharing one context.
import type { StateCreator } from 'zustand';
import { createStudioContext } from './studio/context.ts';
import { createEvalSlice } from './studio/eval-slice.ts';
import { createLibrarySlice } from './studio/library-slice.ts';
import { createMergeSlice } from './studio/merge-slice.ts';
import { createModelsSlice } from './studio/models-slice.ts';
import { createRecipeSlice } from './studio/recipe-slice.ts';
import { createSettingsSlice } from './studio/settings-slice.ts';
import { initialStudioData, type StudioServices, type StudioSlice } from './studio/types.ts';

export * from './studio/types.ts';

export function createStudioSlice(services: StudioServices): StateCreator<StudioSlice, [], [], StudioSlice> {
  return (set, get, api) => {
    const ctx = createStudioContext(services, set, get);
    return {
      studio: initialStudioData(),
      ...createModelsSlice(ctx)(set, get, api),
      ...createRecipeSlice(ctx)(set, get, api),
      ...createMergeSlice(ctx)(set, get, api),
      ...createLibrarySlice(ctx)(set, get, api),
      ...createSettingsSlice(ctx)(set, get, api),
      ...createEvalSlice(ctx)(set, get, api),
    };
  };
}

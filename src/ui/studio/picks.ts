// What panels that never show a task's progress read of the studio, picked field by field: with
// zustand's useShallow, a running merge's progress (a new `merge` object ten times a second) does
// not render them again.
import type { StudioState } from '../../state/store.ts';
import type { StudioData } from '../../state/studio-slice.ts';

export type CompareData = Pick<StudioData, 'merges' | 'library' | 'comparison' | 'arena'>;

export const pickCompareData = (s: StudioState): CompareData => ({
  merges: s.studio.merges,
  library: s.studio.library,
  comparison: s.studio.comparison,
  arena: s.studio.arena,
});

export type RecipeData = Pick<StudioData, 'models' | 'params' | 'outDtype' | 'restored' | 'recipeProblem'>;

export const pickRecipeData = (s: StudioState): RecipeData => ({
  models: s.studio.models,
  params: s.studio.params,
  outDtype: s.studio.outDtype,
  restored: s.studio.restored,
  recipeProblem: s.studio.recipeProblem,
});

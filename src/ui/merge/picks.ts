// What panels that never show a task's progress read of the studio, picked field by field (with
// zustand's useShallow) or as a whole that ignores progress (useStudioWithoutProgress): a running
// task's progress (a new task object ten times a second) does not render them again.
import { useRef } from 'react';
import { useStudio, type StudioState } from '../../state/store.ts';
import type { StudioData } from '../../state/studio-slice.ts';
import type { FloatDtype } from '../../format/dtype.ts';

export type CompareData = Pick<StudioData, 'merges' | 'library' | 'comparison' | 'arena'>;

export const pickCompareData = (s: StudioState): CompareData => ({
  merges: s.studio.merges,
  library: s.studio.library,
  comparison: s.studio.comparison,
  arena: s.studio.arena,
});

export type RecipeData = Pick<
  StudioData,
  'models' | 'params' | 'outDtype' | 'readDtype' | 'restored' | 'recipeProblem' | 'gradients'
> & {
  /**
   * The one dtype that reads this set as the default read precision does (the recipe's `dtype`): null
   * where none does, undefined until the check has said.
   */
  defaultAs: FloatDtype | null | undefined;
};

export const pickRecipeData = (s: StudioState): RecipeData => ({
  models: s.studio.models,
  params: s.studio.params,
  outDtype: s.studio.outDtype,
  readDtype: s.studio.readDtype,
  defaultAs: s.studio.check.result?.precision.defaultAs,
  restored: s.studio.restored,
  recipeProblem: s.studio.recipeProblem,
  gradients: s.studio.gradients,
});

/** A task's state (TaskState): an object with a progress field. */
function isTask(value: unknown): value is { progress: unknown } {
  return typeof value === 'object' && value !== null && 'progress' in value;
}

/** Whether two tasks differ in nothing but their progress. */
function sameTaskBesidesProgress(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const keys = Object.keys(b);
  return (
    keys.length === Object.keys(a).length && keys.every((k) => k === 'progress' || Object.is(a[k], b[k]))
  );
}

/** Whether two studio states differ in nothing but their tasks' progress. */
export function sameBesidesProgress(a: StudioData, b: StudioData): boolean {
  if (a === b) return true;
  const keys = Object.keys(b) as (keyof StudioData)[];
  if (keys.length !== Object.keys(a).length) return false;
  return keys.every((k) => {
    const x: unknown = a[k];
    const y: unknown = b[k];
    return Object.is(x, y) || (isTask(x) && isTask(y) && sameTaskBesidesProgress(x, y));
  });
}

/**
 * The studio as it was at the last change other than a task's progress: for a panel whose progress
 * bar reads the progress on its own (its tasks' `progress` here may be stale).
 */
export function useStudioWithoutProgress(): StudioData {
  const last = useRef<StudioData | null>(null);
  return useStudio((s) => {
    const previous = last.current;
    if (previous && sameBesidesProgress(previous, s.studio)) return previous;
    last.current = s.studio;
    return s.studio;
  });
}

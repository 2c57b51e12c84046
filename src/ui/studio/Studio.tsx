// The studio's workflow, in order: models, statistics, merge, export, arena, evaluation; the demo set loads on
// first mount so the page shows real numbers without any file chosen.
import { useEffect } from 'react';
import {
  parseSessionRecipe,
  recipeFromFragment,
  serializeSessionRecipe,
  SESSION_STORAGE_KEY,
} from '../../state/session.ts';
import { studioStore } from '../../state/store.ts';
import { sessionRecipe } from '../../state/studio-slice.ts';
import { MEMORY_BUDGETS } from '../../worker/protocol.ts';
import { ArenaPanel } from '../arena/ArenaPanel.tsx';
import { EvalPanel } from '../eval/EvalPanel.tsx';
import { ExportPanel } from '../export/ExportPanel.tsx';
import { InspectPanel } from '../inspect/InspectPanel.tsx';
import { LoadPanel } from '../load/LoadPanel.tsx';
import { MergePanel } from '../merge/MergePanel.tsx';
import { NonFinite } from '../inspect/NonFinite.tsx';
import { StatsPanel } from '../stats/StatsPanel.tsx';
import './studio.css';

/**
 * Applies the recipe of a link (#recipe=…), else the one this browser saved. Returns why a link's
 * recipe could not be used, or null.
 */
function restoreRecipe(): string | null {
  const store = studioStore.getState();
  try {
    const linked = recipeFromFragment(location.hash);
    if (linked) {
      store.applyRecipe(linked, 'link');
      return null;
    }
  } catch (error) {
    return `The recipe in this link could not be read (${(error as Error).message}); the saved one is used.`;
  }
  const saved = localStorage.getItem(SESSION_STORAGE_KEY);
  if (saved === null) return null;
  try {
    store.applyRecipe(parseSessionRecipe(saved), 'saved');
  } catch {
    // A saved recipe of an older or broken form is dropped, not shown: the defaults apply.
    localStorage.removeItem(SESSION_STORAGE_KEY);
  }
  return null;
}

/** Where this browser keeps the engine card's memory budget (bytes), apart from the shareable recipe. */
export const BUDGET_STORAGE_KEY = 'merge-studio.memory-budget.v1';

/** Sets the memory budget this browser saved, where it is one the engine card offers. */
function restoreBudget(): void {
  const saved = Number(localStorage.getItem(BUDGET_STORAGE_KEY));
  if (saved !== studioStore.getState().studio.memoryBudget && MEMORY_BUDGETS.includes(saved))
    void studioStore.getState().setMemoryBudget(saved);
}

/** Saves the memory budget whenever it changes: it is this machine's, so it is no part of the recipe. */
function saveBudget(): () => void {
  let last = studioStore.getState().studio.memoryBudget;
  return studioStore.subscribe((state) => {
    if (state.studio.memoryBudget === last) return;
    last = state.studio.memoryBudget;
    try {
      localStorage.setItem(BUDGET_STORAGE_KEY, String(last));
    } catch {
      // Storage full or disabled: the default budget comes back after a reload.
    }
  });
}

/** Saves the recipe whenever it changes, so a reload brings it back. */
function saveRecipe(): () => void {
  let last = '';
  return studioStore.subscribe((state) => {
    const text = serializeSessionRecipe(sessionRecipe(state.studio));
    if (text === last) return;
    last = text;
    try {
      localStorage.setItem(SESSION_STORAGE_KEY, text);
    } catch {
      // Storage full or disabled: the session just does not come back after a reload.
    }
  });
}

export function Studio() {
  useEffect(() => {
    // StrictMode mounts twice; only a studio with nothing loaded restores and starts the demo.
    if (studioStore.getState().studio.source === 'none') {
      restoreBudget();
      const problem = restoreRecipe();
      if (problem) studioStore.getState().setRecipeProblem(problem);
      void studioStore.getState().loadDemo();
    }
    const unsubscribe = [saveRecipe(), saveBudget()];
    // Merges written before a reload are still in OPFS: list them.
    void studioStore.getState().refreshLibrary();
    return () => unsubscribe.forEach((u) => u());
  }, []);
  return (
    // On wide screens the merge panel is a second column that stays in view (see studio.css).
    <div className="studio" data-testid="studio">
      <LoadPanel />
      <StatsPanel />
      <InspectPanel />
      <NonFinite />
      <MergePanel />
      <ExportPanel />
      <ArenaPanel />
      <EvalPanel />
    </div>
  );
}

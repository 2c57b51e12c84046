// The studio's workflow, in order: models, statistics, merge, export, arena; the demo set loads on
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
import { ArenaPanel } from './ArenaPanel.tsx';
import { ExportPanel } from './ExportPanel.tsx';
import { InspectPanel } from './InspectPanel.tsx';
import { LoadPanel } from './LoadPanel.tsx';
import { MergePanel } from './MergePanel.tsx';
import { NonFinite } from './NonFinite.tsx';
import { StatsPanel } from './StatsPanel.tsx';
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
      const problem = restoreRecipe();
      if (problem) studioStore.getState().setRecipeProblem(problem);
      void studioStore.getState().loadDemo();
    }
    const unsubscribe = saveRecipe();
    // Merges written before a reload are still in OPFS: list them.
    void studioStore.getState().refreshLibrary();
    return unsubscribe;
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
    </div>
  );
}

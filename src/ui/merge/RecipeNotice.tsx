// Where a restored or imported recipe came from, shown at the top of the Merge step where its method
// and parameters are (not below the previews): which recipe model became which loaded agent, what the
// studio does not do as the recipe says, and the models to pick again. (A recipe's mergekit `dtype` sets
// the read precision, shown in step 2 and beside the parameters.)
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { keptFolders, type KeptFolder } from '../../io/handle-store.ts';
import { useStudio } from '../../state/store.ts';
import { sessionRecipe } from '../../state/studio-slice.ts';
import { reopenFolders } from '../load/folders.ts';
import { pickRecipeData, type RecipeData } from './picks.ts';
import { recipeModelName } from '../../state/studio/recipe-import.ts';

const FROM_TEXT = { saved: 'your last session', link: 'the link', yaml: 'the mergekit YAML' } as const;

/** The kept folders (see handle-store.ts) of these labels, looked up again when the labels change. */
function useKeptFolders(labels: string[]): KeptFolder[] {
  const [kept, setKept] = useState<KeptFolder[]>([]);
  const key = JSON.stringify(labels);
  useEffect(() => {
    let live = true;
    keptFolders(JSON.parse(key) as string[]).then(
      (found) => live && setKept(found),
      () => live && setKept([]),
    );
    return () => {
      live = false;
    };
  }, [key]);
  return kept;
}

/** Where the recipe came from, and the models it names that are not the ones loaded now. */
function Restored({ data }: { data: RecipeData }) {
  const { restored } = data;
  const named = restored ? [restored.base, ...restored.agents].filter((l): l is string => l !== null) : [];
  const kept = useKeptFolders(named);
  const [refused, setRefused] = useState<string[]>([]);
  if (!restored) return null;
  const loaded = sessionRecipe(data);
  // Every recipe model went to the loaded agent of its name: nothing to pick again.
  const mapped = restored.mapping !== undefined && restored.mapping.every((row) => row.by === 'name');
  const same =
    mapped ||
    (restored.base === loaded.base &&
      restored.agents.length === loaded.agents.length &&
      restored.agents.every((a, i) => a === loaded.agents[i]));
  const missing = named.filter((label) => !kept.some((k) => k.label === label));
  return (
    <div className="notice" role="status" data-testid="recipe-restored" data-from={restored.from}>
      <p>
        Method, parameters{restored.from === 'yaml' ? ', gradients, filters' : ''} and output dtype restored
        from {FROM_TEXT[restored.from]}.
        {!same && named.length > 0 && (
          <>
            {' '}
            It was made for {restored.base ? `base ${restored.base} and ` : ''}
            {restored.agents.length > 0 ? `agents ${restored.agents.join(', ')}` : 'no agents'}
            {kept.length === 0
              ? ': the browser cannot reopen files by name, so choose those models again under Models.'
              : missing.length > 0
                ? `; the browser kept the folders of ${kept.map((k) => k.label).join(', ')}, choose ${missing.join(', ')} again under Models.`
                : '; the browser kept their folders.'}
          </>
        )}
      </p>
      {restored.mapping && restored.mapping.length > 0 && (
        <div data-testid="recipe-mapping">
          <p>Recipe models and the loaded models they became:</p>
          <ul className="studio-mapping">
            {restored.base && loaded.base && (
              <li data-testid="recipe-mapping-base">
                <code>{restored.base}</code> → {loaded.base}{' '}
                <span className="muted">
                  (
                  {recipeModelName(restored.base) === recipeModelName(loaded.base)
                    ? 'by name'
                    : 'the loaded base, in its place'}
                  )
                </span>
              </li>
            )}
            {restored.mapping.map((row, i) => (
              <li key={`${i}-${row.recipe}`} data-testid="recipe-mapping-row" data-by={row.by ?? 'none'}>
                <code>{row.recipe}</code> →{' '}
                {row.loaded === null ? (
                  <span className="muted">none loaded</span>
                ) : (
                  <>
                    {row.loaded} <span className="muted">(by {row.by})</span>
                  </>
                )}
              </li>
            ))}
          </ul>
        </div>
      )}
      {restored.unhonoured && restored.unhonoured.length > 0 && (
        <div data-testid="recipe-unhonoured">
          <p>Not done as the recipe says:</p>
          <ul>
            {restored.unhonoured.map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
        </div>
      )}
      {!same && kept.length > 0 && (
        <p className="studio-actions">
          <button
            type="button"
            className="button button--secondary"
            data-testid="recipe-reopen"
            onClick={() => void reopenFolders(kept).then(setRefused)}
          >
            Reopen {kept.map((k) => k.label).join(', ')}
          </button>
          {refused.length > 0 && (
            <span className="muted" data-testid="recipe-reopen-refused">
              Reading {refused.join(', ')} was not allowed: choose {refused.length === 1 ? 'it' : 'them'}{' '}
              again under Models.
            </span>
          )}
        </p>
      )}
    </div>
  );
}

/** The recipe notice, from the store. */
export function RecipeNotice() {
  const data = useStudio(useShallow(pickRecipeData));
  return <Restored data={data} />;
}

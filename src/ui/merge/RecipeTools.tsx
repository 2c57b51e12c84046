// The recipe beyond this page: which saved session, link or YAML it came from (and which models it
// names, to pick again), a link that carries it (never a path or a weight), and mergekit YAML out and in.
import { useEffect, useId, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { recipeFragment } from '../../state/session.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { sessionRecipe } from '../../state/studio-slice.ts';
import { deferred } from '../studio/deferred.tsx';
import { pickRecipeData } from './picks.ts';
import type { YamlRecipe } from './MergekitYaml.tsx';
import { gradientsOf } from '../../state/studio/recipe-import.ts';

// mergekit YAML (and the YAML library) comes in a chunk of its own, fetched after the first frame.
const yamlModule = () => import('./MergekitYaml.tsx');
const Yaml = deferred<{ recipe: YamlRecipe }>(() => yamlModule().then((m) => m.MergekitYaml));

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/yaml' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function RecipeTools() {
  const data = useStudio(useShallow(pickRecipeData));
  const [link, setLink] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [imported, setImported] = useState<string | null>(null);
  const linkId = useId();
  const importId = useId();
  const session = sessionRecipe(data);
  const recipe = { ...session, defaultAs: data.defaultAs };
  useEffect(() => void Yaml.preload(), []);
  const downloadYaml = async (): Promise<void> => {
    const { recipeYaml } = await yamlModule();
    download('mergekit_config.yml', recipeYaml(recipe));
  };
  const copyLink = (): void => {
    const url = new URL(location.href);
    url.hash = recipeFragment(session);
    history.replaceState(null, '', url);
    setLink(url.href);
    navigator.clipboard.writeText(url.href).then(
      () => setNote('Link copied.'),
      () => setNote('The clipboard refused; copy the link from the field.'),
    );
  };
  const importYaml = async (file: File): Promise<void> => {
    const store = studioStore.getState();
    try {
      const { parseMergekitYaml } = await yamlModule();
      const parsed = parseMergekitYaml(await file.text(), file.name);
      const gradients = parsed.settings && gradientsOf(parsed.settings);
      store.applyRecipe(
        {
          base: parsed.base || null,
          agents: parsed.models,
          params: parsed.params,
          outDtype: parsed.outDtype ?? null,
          ...(gradients ? { gradients } : {}),
          // mergekit's dtype casts the inputs on load: it sets the read precision (none: the default).
          readDtype: parsed.mathDtype ?? null,
        },
        'yaml',
        parsed.notes,
      );
      const left = studioStore.getState().studio.restored?.unhonoured?.length ?? 0;
      setImported(
        `${file.name} imported: its method and parameters are set at the top of this step` +
          (left > 0 ? `, with ${left} thing${left === 1 ? '' : 's'} not done as it says.` : '.'),
      );
    } catch (error) {
      setImported(null);
      store.setRecipeProblem(`${file.name} was not imported: ${(error as Error).message}`);
    }
  };
  return (
    <div className="studio-recipe-tools" data-testid="recipe-tools">
      {data.recipeProblem && (
        <p className="notice notice--error" role="alert" data-testid="recipe-problem">
          {data.recipeProblem}
        </p>
      )}
      <div className="studio-actions">
        <button
          type="button"
          className="button button--secondary"
          data-testid="recipe-link-copy"
          onClick={copyLink}
        >
          Copy link to this recipe
        </button>
        <button
          type="button"
          className="button button--secondary"
          data-testid="recipe-yaml-download"
          onClick={() => void downloadYaml()}
        >
          Download YAML
        </button>
        <label className="button button--secondary studio-file" htmlFor={importId}>
          Import YAML…
        </label>
        <input
          id={importId}
          className="visually-hidden"
          type="file"
          accept=".yml,.yaml,text/yaml"
          data-testid="recipe-yaml-input"
          aria-label="Import a mergekit YAML recipe"
          onChange={(event) => {
            const file = event.currentTarget.files?.[0];
            if (file) void importYaml(file);
            event.currentTarget.value = '';
          }}
        />
        {note && <span role="status">{note}</span>}
        <span role="status" data-testid="recipe-imported">
          {imported && (
            <>
              {imported} <a href="#merge-heading">Go to the recipe</a>
            </>
          )}
        </span>
      </div>
      {link && (
        <div className="studio-field">
          <label htmlFor={linkId}>Link (the recipe only: no file paths, no weights)</label>
          <input
            id={linkId}
            readOnly
            value={link}
            data-testid="recipe-link"
            onFocus={(event) => event.currentTarget.select()}
          />
        </div>
      )}
      <details>
        <summary>mergekit YAML of this recipe</summary>
        <Yaml.View recipe={recipe} fallback={<pre className="studio-pre muted">Reading the recipe…</pre>} />
      </details>
    </div>
  );
}

// The recipe beyond this page: which saved session, link or YAML it came from (and which models it
// names, to pick again), a link that carries it (never a path or a weight), and mergekit YAML out and in.
import { useEffect, useId, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { keptFolders, type KeptFolder } from '../../io/handle-store.ts';
import { recipeFragment } from '../../state/session.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { sessionRecipe } from '../../state/studio-slice.ts';
import { reopenFolders } from '../load/folders.ts';
import { deferred } from '../studio/deferred.tsx';
import { pickRecipeData, type RecipeData } from './picks.ts';
import type { YamlRecipe } from './MergekitYaml.tsx';

// mergekit YAML (and the YAML library) comes in a chunk of its own, fetched after the first frame.
const yamlModule = () => import('./MergekitYaml.tsx');
const Yaml = deferred<{ recipe: YamlRecipe }>(() => yamlModule().then((m) => m.MergekitYaml));

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
  const same =
    restored.base === loaded.base &&
    restored.agents.length === loaded.agents.length &&
    restored.agents.every((a, i) => a === loaded.agents[i]);
  const missing = named.filter((label) => !kept.some((k) => k.label === label));
  return (
    <div className="notice" role="status" data-testid="recipe-restored" data-from={restored.from}>
      <p>
        Method, parameters and output dtype restored from {FROM_TEXT[restored.from]}.
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
      store.applyRecipe(
        {
          base: parsed.base,
          agents: parsed.models,
          params: parsed.params,
          outDtype: parsed.outDtype ?? null,
          // mergekit's dtype casts the inputs on load: it sets the read precision (none: the default).
          readDtype: parsed.mathDtype ?? null,
        },
        'yaml',
      );
    } catch (error) {
      store.setRecipeProblem(`${file.name} was not imported: ${(error as Error).message}`);
    }
  };
  return (
    <div className="studio-recipe-tools" data-testid="recipe-tools">
      <Restored data={data} />
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

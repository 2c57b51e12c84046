// The recipe as mergekit YAML, shown, downloaded and read back: in a chunk of its own with the YAML
// library (most of what it weighs), which the page fetches after its first frame.
import { parseMergekitYaml, toMergekitYaml } from '../../methods/recipe.ts';
import type { SessionRecipe } from '../../state/session.ts';
import { mergeSettings } from '../../state/studio/recipe-import.ts';

export { parseMergekitYaml };

/** The recipe in mergekit's config format, gradients and filters included; models are named by their labels. */
export function recipeYaml(recipe: SessionRecipe): string {
  const settings = mergeSettings(recipe.params, recipe.gradients ?? null, recipe.agents.length);
  return toMergekitYaml({
    base: recipe.base ?? 'base',
    models: recipe.agents,
    params: recipe.params,
    outDtype: recipe.outDtype ?? undefined,
    ...(settings ? { settings } : {}),
  });
}

export function MergekitYaml({ recipe }: { recipe: SessionRecipe }) {
  return (
    <pre className="studio-pre" data-testid="recipe-yaml" tabIndex={0} aria-label="mergekit recipe">
      {recipeYaml(recipe)}
    </pre>
  );
}

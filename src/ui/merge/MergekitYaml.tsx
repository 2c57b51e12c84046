// The recipe as mergekit YAML, shown, downloaded and read back: in a chunk of its own with the YAML
// library (most of what it weighs), which the page fetches after its first frame.
import { parseMergekitYaml, toMergekitYaml } from '../../methods/recipe.ts';
import { recipeReadDtype } from '../../driver/read-precision.ts';
import type { FloatDtype } from '../../format/dtype.ts';
import type { SessionRecipe } from '../../state/session.ts';
import { mergeSettings } from '../../state/studio/recipe-import.ts';

export { parseMergekitYaml };

/** A session's recipe and the dtype that reads its set as the default read precision does (or null). */
export type YamlRecipe = SessionRecipe & { defaultAs?: FloatDtype | null };

/** The recipe in mergekit's config format, gradients and filters included; models are named by their labels, `dtype` says the read precision. */
export function recipeYaml(recipe: YamlRecipe): string {
  const settings = mergeSettings(recipe.params, recipe.gradients ?? null, recipe.agents.length);
  // Before the check has said what the set stores, the default is taken for a uniform set's.
  const mathDtype = recipeReadDtype(
    recipe.readDtype ?? undefined,
    recipe.defaultAs === undefined ? 'F32' : recipe.defaultAs,
  );
  return toMergekitYaml({
    base: recipe.base ?? 'base',
    models: recipe.agents,
    params: recipe.params,
    outDtype: recipe.outDtype ?? undefined,
    ...(settings ? { settings } : {}),
    mathDtype,
  });
}

export function MergekitYaml({ recipe }: { recipe: YamlRecipe }) {
  return (
    <pre className="studio-pre" data-testid="recipe-yaml" tabIndex={0} aria-label="mergekit recipe">
      {recipeYaml(recipe)}
    </pre>
  );
}

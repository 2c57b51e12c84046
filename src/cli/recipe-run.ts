// Runs a recipe file: one document is one merge; several run in order as mergekit-multi runs them,
// each named stage written to its own folder beside --out and usable by name in the stages after it.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseMergekitRecipes, RecipeError, shorten, type Recipe } from '../methods/recipe.ts';
import { at, must } from '../io/checked.ts';
import { emptyOrMissing } from './args.ts';

/** Where a named stage of a multi-document recipe is written: `<out>.stages/<name>`. */
export function stageFolder(outDir: string, name: string): string {
  return join(`${outDir}.stages`, name.replace(/[^\w.-]/g, '_'));
}

export async function runRecipeFile(
  file: string,
  outDir: string,
  runOne: (recipe: Recipe, out: string, file: string) => Promise<void>,
): Promise<void> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new RecipeError(
      `${shorten(file)}: cannot read the recipe: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  const recipes = parseMergekitRecipes(text, file);
  const [only] = recipes;
  if (recipes.length === 1 && only) return runOne(only, outDir, file);

  const names = recipes.map((r) => r.name);
  // Every stage but the last has a name (parseMergekitRecipes requires it).
  const outs = recipes.map((r, i) =>
    i === recipes.length - 1
      ? outDir
      : stageFolder(outDir, must(r.name, `${shorten(file)}: the name of stage ${i + 1}`)),
  );
  recipes.forEach((recipe, i) => {
    for (const input of [recipe.base, ...recipe.models]) {
      const later = names.indexOf(input, i);
      if (later >= 0)
        throw new RecipeError(
          `${shorten(file)}: stage ${i + 1} uses ${JSON.stringify(shorten(input, 60))}, which is stage ${later + 1}: ` +
            'list the stages in the order they run, each after the stages it uses',
        );
    }
  });
  // Every output is claimed before the first stage runs, so a late stage cannot fail on a full folder.
  for (const out of outs) await emptyOrMissing(out);
  const done = new Map<string, string>();
  for (const [i, recipe] of recipes.entries()) {
    const input = (path: string): string => done.get(path) ?? path;
    const stage: Recipe = {
      ...recipe,
      base: recipe.base && input(recipe.base),
      models: recipe.models.map(input),
    };
    const out = at(outs, i, 'stage outputs');
    process.stderr.write(
      `Stage ${i + 1}/${recipes.length} ${recipe.name ?? '(final)'}: ${recipe.params.method} → ${out}\n`,
    );
    await runOne(stage, out, `${file} (stage ${recipe.name ?? i + 1})`);
    if (recipe.name) done.set(recipe.name, out);
  }
}

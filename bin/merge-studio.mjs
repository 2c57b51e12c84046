#!/usr/bin/env node
// Entry of the `merge-studio` command. It runs the built bundle, dist-cli/merge-studio.mjs (`npm ci`
// and `npm run build:cli` make it; it starts in a tenth of the time the sources take through a
// TypeScript loader). Where the bundle is missing, or older than a file under src/ or shaders/ (a
// checkout edited since its last build), it runs the sources as they are instead, so that the command
// never runs code older than the checkout.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const bundle = new URL('../dist-cli/merge-studio.mjs', import.meta.url);

/** The newest modification time of any file under `dir` (0 where it does not exist). */
function newest(dir) {
  if (!existsSync(dir)) return 0;
  let time = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile())
      time = Math.max(time, statSync(`${entry.parentPath ?? entry.path}/${entry.name}`).mtimeMs);
  return time;
}

function bundleIsCurrent() {
  if (process.env.MERGE_STUDIO_FROM_SOURCE || !existsSync(bundle)) return false;
  const built = statSync(bundle).mtimeMs;
  const root = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
  return newest(root('src')) <= built && newest(root('shaders')) <= built;
}

if (bundleIsCurrent()) await import(bundle.href);
else {
  await import('./register.mjs');
  await import('../src/cli/main.ts');
}

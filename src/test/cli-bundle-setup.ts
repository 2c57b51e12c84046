// Vitest global setup: builds the `merge-studio` bundle (vite.cli.config.ts) before any test runs, so
// that the CLI tests (src/test/cli.ts) run the code users run, never a bundle older than the sources
// (bin/merge-studio.mjs would then fall back to the sources and the bundle would go untested).
import { build } from 'vite';

export default async function setup(): Promise<void> {
  await build({ configFile: 'vite.cli.config.ts' });
}

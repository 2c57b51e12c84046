#!/usr/bin/env node
// Entry of the `merge-studio` command: registers the loader that runs the TypeScript sources as
// they are (no build step), then runs the CLI.
await import('./register.mjs');
await import('../src/cli/main.ts');

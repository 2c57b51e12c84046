#!/usr/bin/env node
// Entry of the `merge-studio` command. It re-runs Node with V8's optimising compiler off, because
// dawn.node on SwiftShader crashes once TurboFan has optimised hot JS (see ENVIRONMENT.md), and
// with the loader that runs the TypeScript sources as they are.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const register = fileURLToPath(new URL('./register.mjs', import.meta.url));
const main = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const result = spawnSync(process.execPath, ['--no-opt', '--import', register, main, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
if (result.error) {
  process.stderr.write(`merge-studio: could not start Node: ${result.error.message}\n`);
  process.exit(1);
}
process.exit(result.status ?? (result.signal ? 128 + 15 : 1));

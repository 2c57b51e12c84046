// Builds the `merge-studio` command into one ES module, dist-cli/merge-studio.mjs, so that the command
// starts without a TypeScript loader (bin/merge-studio.mjs). Vite's own `?raw` handling inlines the
// WGSL; dawn.node (`webgpu`, a native addon) and Node's built-ins stay imports.
// `npm run build:cli` runs it; `npm ci` runs it too (the `prepare` script), and so do the unit tests'
// global setup (src/test/cli-bundle-setup.ts), so the tests always run the bundle users run.
import { rename } from 'node:fs/promises';
import { defineConfig, type Plugin } from 'vite';

export const CLI_BUNDLE = 'merge-studio.mjs';
// Written under a name of its own, then renamed: a command started while the bundle is being built,
// or a second build beside this one, reads the old bundle or the new, never half of one.
const partial = `merge-studio.${process.pid}.partial.mjs`;

const publish: Plugin = {
  name: 'merge-studio:publish-cli-bundle',
  async writeBundle(options) {
    const dir = options.dir ?? 'dist-cli';
    await rename(`${dir}/${partial}`, `${dir}/${CLI_BUNDLE}`);
  },
};

export default defineConfig({
  publicDir: false,
  logLevel: 'warn',
  plugins: [publish],
  // `merge-studio --version` says which it runs: this bundle or the sources.
  define: { __MERGE_STUDIO_BUNDLE__: 'true' },
  build: {
    ssr: 'src/cli/main.ts',
    outDir: 'dist-cli',
    emptyOutDir: false,
    target: 'node20',
    minify: false,
    // One file: one rename publishes it whole (chunks would be published one by one).
    rollupOptions: { output: { entryFileNames: partial, format: 'es', codeSplitting: false } },
  },
  ssr: { noExternal: true, external: ['webgpu'] },
});

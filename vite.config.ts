// Vite serves and builds the studio; Vitest (configured here too) runs unit tests and, in a
// separate project one file at a time, the real-WebGPU tests on dawn.node.
import { readFileSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import type { Plugin } from 'vite';
import react from '@vitejs/plugin-react';

// The app talks to nothing but its own origin: weights never leave the machine. 'wasm-unsafe-eval'
// lets the worker compile WebAssembly (its SHA-256, src/io/sha256.ts, bundled with the app); it does
// not allow eval of JavaScript.
const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

// The dev server's React Refresh preamble is an inline script; only `vite` (dev) allows it, never
// a build or `vite preview`.
const devInlineScripts: Plugin = {
  name: 'merge-studio:dev-inline-scripts',
  apply: 'serve',
  transformIndexHtml: (html) => html.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'"),
};

// public/_headers (Netlify and Cloudflare Pages read it) carries the same policy to static hosts, for
// the worker too: a meta tag does not apply to workers. A build with a drifted copy fails.
const staticHostHeaders: Plugin = {
  name: 'merge-studio:static-host-headers',
  apply: 'build',
  buildStart() {
    const file = new URL('./public/_headers', import.meta.url);
    const policy = /^\s+Content-Security-Policy: (.+)$/m.exec(readFileSync(file, 'utf8'))?.[1];
    if (policy !== contentSecurityPolicy)
      this.error(
        `public/_headers must carry the Content-Security-Policy of vite.config.ts:\n  ${contentSecurityPolicy}`,
      );
  },
};

export default defineConfig({
  plugins: [react(), devInlineScripts, staticHostHeaders],
  preview: { headers: { 'Content-Security-Policy': contentSecurityPolicy } },
  worker: { format: 'es' },
  build: { target: 'es2022', sourcemap: true },
  test: {
    // Each project inherits it (`extends: true`); building twice is harmless (vite.cli.config.ts).
    globalSetup: ['src/test/cli-bundle-setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          exclude: ['src/**/*.gpu.test.ts'],
          // A hang detector, not a speed limit (speed is measured in `npm run bench`): Vitest's 5 s
          // default failed the demo's arena replay (18 full evaluations) on a loaded 2-core CI machine.
          testTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'gpu',
          include: ['src/**/*.gpu.test.ts'],
          pool: 'forks',
          // V8's optimiser stays on: the dawn.node crash was the instance's lifetime, which
          // src/cli/node-gpu.ts fixes (and src/cli/node-gpu.gpu.test.ts checks).
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});

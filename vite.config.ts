// Vite serves and builds the studio; Vitest (configured here too) runs unit tests and, in a
// separate project one file at a time, the real-WebGPU tests on dawn.node.
import { defineConfig } from 'vitest/config';
import type { Plugin } from 'vite';
import react from '@vitejs/plugin-react';

// The app talks to nothing but its own origin: weights never leave the machine.
const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
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

export default defineConfig({
  plugins: [react(), devInlineScripts],
  preview: { headers: { 'Content-Security-Policy': contentSecurityPolicy } },
  worker: { format: 'es' },
  build: { target: 'es2022', sourcemap: true },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          exclude: ['src/**/*.gpu.test.ts'],
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

// End-to-end tests in the system's headless Chromium with real WebGPU (SwiftShader), against a
// production build made in 'e2e' mode (which adds the window test API) and served by `vite preview`.
import { defineConfig } from '@playwright/test';

// E2E_PORT lets several checkouts on one machine run their suites side by side.
const PORT = Number(process.env.E2E_PORT ?? 5199);
const BASE_URL = `http://127.0.0.1:${PORT}`;
// Outside Playwright's outputDir, which it empties before the web server starts.
const BUILD_DIR = 'test-results/e2e-build';

export default defineConfig({
  testDir: 'e2e',
  outputDir: 'test-results/playwright',
  fullyParallel: false,
  workers: 1,
  retries: 0,
  forbidOnly: !!process.env.CI,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  // `list` ends with the "N passed (time)" summary line.
  reporter: [['list']],
  use: {
    baseURL: BASE_URL,
    browserName: 'chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    actionTimeout: 10_000,
    navigationTimeout: 30_000,
    trace: 'retain-on-failure',
    launchOptions: {
      // Never a downloaded browser: the machines have no internet.
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      // Only --enable-unsafe-webgpu is needed for navigator.gpu on SwiftShader; Playwright already
      // passes --no-sandbox and most of the no-network switches, repeated here so they stay put.
      args: [
        '--enable-unsafe-webgpu',
        '--disable-quic',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    },
  },
  webServer: {
    command:
      `npx vite build --mode e2e --outDir ${BUILD_DIR} --emptyOutDir --logLevel warn && ` +
      `npx vite preview --mode e2e --outDir ${BUILD_DIR} --host 127.0.0.1 --port ${PORT} --strictPort`,
    url: BASE_URL,
    reuseExistingServer: !process.env.CI,
    timeout: 120_000,
    stdout: 'ignore',
    stderr: 'pipe',
  },
});

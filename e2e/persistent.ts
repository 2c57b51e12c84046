// A browser with a persistent profile (as a person's browser is), for what must survive a reload:
// OPFS and localStorage outlive the page. Launched with the project's own Chromium options.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page, type TestInfo } from '@playwright/test';

export interface PersistentBrowser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

export async function launchPersistent(
  testInfo: TestInfo,
  baseURL: string | undefined,
): Promise<PersistentBrowser> {
  const use = testInfo.project.use;
  const profile = await mkdtemp(join(tmpdir(), 'merge-studio-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    ...use.launchOptions,
    headless: true,
    baseURL,
    viewport: use.viewport ?? { width: 1280, height: 800 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

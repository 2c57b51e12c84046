// A browser with a persistent profile (as a person's browser is), for what must survive a reload:
// OPFS, IndexedDB and localStorage outlive the page. Launched with the project's own Chromium
// options, as the `persistent` fixture: its page and workflow, the profile removed afterwards.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, test as base, type BrowserContext, type Page } from '@playwright/test';
import { WorkflowPage } from './workflow-page.ts';

export interface PersistentBrowser {
  context: BrowserContext;
  page: Page;
  workflow: WorkflowPage;
}

export const test = base.extend<{ persistent: PersistentBrowser }>({
  persistent: async ({ baseURL }, use, testInfo) => {
    const options = testInfo.project.use;
    const profile = await mkdtemp(join(tmpdir(), 'merge-studio-profile-'));
    const context = await chromium.launchPersistentContext(profile, {
      ...options.launchOptions,
      headless: true,
      baseURL,
      viewport: options.viewport ?? { width: 1280, height: 800 },
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await use({ context, page, workflow: new WorkflowPage(page) });
    } finally {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    }
  },
});

export { expect } from '@playwright/test';

// Test fixtures: the studio page object, a log of every request the browser makes, and the
// console errors and uncaught exceptions of the page.
import { test as base } from '@playwright/test';
import { StudioPage } from './studio-page.ts';

export interface NetworkLog {
  /** Every URL requested in this test's browser context, workers included, in order. */
  readonly urls: string[];
}

export interface BrowserErrors {
  /** console.error messages and uncaught exceptions, as text. */
  readonly messages: string[];
}

export const test = base.extend<{ studio: StudioPage; network: NetworkLog; browserErrors: BrowserErrors }>({
  studio: async ({ page }, use) => {
    await use(new StudioPage(page));
  },
  network: async ({ context }, use) => {
    const urls: string[] = [];
    context.on('request', (request) => urls.push(request.url()));
    await use({ urls });
  },
  browserErrors: async ({ page }, use) => {
    const messages: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') messages.push(`console.error: ${message.text()}`);
    });
    page.on('pageerror', (error) => messages.push(`uncaught: ${error.message}`));
    await use({ messages });
  },
});

export { expect } from '@playwright/test';

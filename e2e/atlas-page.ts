// Page object for the statistics views at LLM scale: the atlas cells as data, the exports as
// downloads, and the check that every SVG label lies inside its chart.
import { readFile } from 'node:fs/promises';
import { expect, type Locator, type Page } from '@playwright/test';

export interface AtlasCellData {
  agent: number;
  row: string;
  module: string;
  tensors: string[];
  numel: number;
  changed: number;
  unique: number;
}

export class AtlasPage {
  readonly atlas: Locator;
  readonly cells: Locator;
  readonly statsPanel: Locator;

  constructor(readonly page: Page) {
    this.atlas = page.getByTestId('atlas');
    this.cells = page.getByTestId('atlas-cell');
    this.statsPanel = page.getByTestId('stats-panel');
  }

  async cellData(): Promise<AtlasCellData[]> {
    return this.cells.evaluateAll((cells) =>
      cells.map((c) => ({
        agent: Number(c.getAttribute('data-agent')),
        row: c.getAttribute('data-row') ?? '',
        module: c.getAttribute('data-module') ?? '',
        tensors: JSON.parse(c.getAttribute('data-tensors') ?? '[]') as string[],
        numel: Number(c.getAttribute('data-numel')),
        changed: Number(c.getAttribute('data-changed')),
        unique: Number(c.getAttribute('data-unique')),
      })),
    );
  }

  /** Clicks a button that downloads a file and returns the file's text. */
  async download(button: Locator): Promise<{ name: string; text: string }> {
    const [download] = await Promise.all([this.page.waitForEvent('download'), button.click()]);
    const path = await download.path();
    return { name: download.suggestedFilename(), text: await readFile(path, 'utf8') };
  }

  /**
   * Every rendered SVG text in the statistics panel whose box leaves its outermost SVG's box (0.5 px
   * slack), as "text @ chart" descriptions.
   */
  clippedTexts(): Promise<string[]> {
    return this.statsPanel.evaluate((panel) => {
      const out: string[] = [];
      for (const text of panel.querySelectorAll('svg text')) {
        let svg = text.closest('svg');
        while (svg?.parentElement?.closest('svg')) svg = svg.parentElement.closest('svg');
        if (!svg) continue;
        const r = text.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) continue;
        const s = svg.getBoundingClientRect();
        if (
          r.left < s.left - 0.5 ||
          r.right > s.right + 0.5 ||
          r.top < s.top - 0.5 ||
          r.bottom > s.bottom + 0.5
        ) {
          const figure = svg.closest('[data-testid]')?.getAttribute('data-testid') ?? '?';
          const box = (b: DOMRect): string => [b.left, b.top, b.right, b.bottom].map(Math.round).join(',');
          out.push(`${text.textContent ?? ''} @ ${figure}: ${box(r)} outside ${box(s)}`);
        }
      }
      return out;
    });
  }

  async expectReady(): Promise<void> {
    await expect(this.statsPanel).toHaveAttribute('data-status', 'done');
    await expect(this.atlas).toBeVisible();
  }
}

// Page object for the studio's workflow panels (models, statistics, merge, export, arena): locators
// by data-testid and the studio part of the window test API.
import { copyFile, mkdir } from 'node:fs/promises';
import { expect, type Locator, type Page, type TestInfo } from '@playwright/test';
import type { AnalysisResult } from '../src/engine/driver.ts';
import type { StudioData, TaskState } from '../src/state/studio-slice.ts';

export class WorkflowPage {
  readonly loadPanel: Locator;
  readonly statsPanel: Locator;
  readonly mergePanel: Locator;
  readonly exportPanel: Locator;
  readonly arenaPanel: Locator;
  readonly mergeButton: Locator;

  constructor(readonly page: Page) {
    this.loadPanel = page.getByTestId('load-panel');
    this.statsPanel = page.getByTestId('stats-panel');
    this.mergePanel = page.getByTestId('merge-panel');
    this.exportPanel = page.getByTestId('export-panel');
    this.arenaPanel = page.getByTestId('arena-panel');
    this.mergeButton = page.getByTestId('merge-run');
  }

  /** Opens the app and waits for the demo's statistics pass to finish. */
  async openDemo(): Promise<TaskState<AnalysisResult>> {
    await this.page.goto('/');
    const analysis = await this.analysisSettled();
    expect(analysis.status).toBe('done');
    await expect(this.statsPanel).toHaveAttribute('data-status', 'done');
    return analysis;
  }

  analysisSettled(): Promise<TaskState<AnalysisResult>> {
    return this.page.evaluate(() => window.__mergeStudio!.analysisSettled());
  }

  studio(): Promise<StudioData> {
    return this.page.evaluate(() => window.__mergeStudio!.studio());
  }

  setReadDelay(ms: number): Promise<void> {
    return this.page.evaluate((delay) => window.__mergeStudio!.setReadDelay(delay), ms);
  }

  async mergedFile(folder: string, name: string): Promise<Buffer> {
    const base64 = await this.page.evaluate(
      ([f, n]) => window.__mergeStudio!.mergedFileBase64(f!, n!),
      [folder, name],
    );
    return Buffer.from(base64, 'base64');
  }

  /** Names of the merge subfolders in OPFS. */
  opfsMerges(): Promise<string[]> {
    return this.page.evaluate(async () => {
      const root = await navigator.storage.getDirectory();
      const merges = await root.getDirectoryHandle('merges', { create: true });
      const names: string[] = [];
      for await (const key of merges.keys()) names.push(key);
      return names.sort();
    });
  }

  agentCard(index: number): Locator {
    return this.page.getByTestId(`model-agent-${index}`);
  }

  /** Adds an agent through the plain multi-file input. */
  async addAgentFiles(files: { name: string; buffer: Buffer }[]): Promise<void> {
    await this.page
      .getByTestId('model-new-agent-files-input')
      .setInputFiles(
        files.map((f) => ({ name: f.name, mimeType: 'application/octet-stream', buffer: f.buffer })),
      );
  }

  /** Runs a merge from the button and waits until the export panel lists it. */
  async merge(id: number): Promise<Locator> {
    await this.mergeButton.click();
    const card = this.page.getByTestId(`merge-${id}`);
    await expect(card).toBeVisible({ timeout: 45_000 });
    return card;
  }

  /** An element screenshot; copied to docs/screenshots only when UPDATE_DOCS_SCREENSHOTS is set. */
  async shoot(target: Locator | Page, name: string, testInfo: TestInfo): Promise<void> {
    await this.page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    const path = testInfo.outputPath(`${name}.png`);
    await target.screenshot({ path });
    await testInfo.attach(name, { path, contentType: 'image/png' });
    if (process.env.UPDATE_DOCS_SCREENSHOTS) {
      await mkdir('docs/screenshots', { recursive: true });
      await copyFile(path, `docs/screenshots/${name}.png`);
    }
  }
}

// Page object for the studio's workflow panels (models, statistics, merge, export, arena): locators
// by data-testid and the studio part of the window test API.
import { copyFile, mkdir } from 'node:fs/promises';
import { expect, type Locator, type Page, type TestInfo } from '@playwright/test';
import type { AnalysisResult } from '../src/driver/job.ts';
import type { ModelStats } from '../src/methods/stats.ts';
import type { MethodName } from '../src/methods/types.ts';
import type { StudioData, TaskState } from '../src/state/studio-slice.ts';
import { at } from '../src/io/checked.ts';

const count = (n: number): string => new Intl.NumberFormat('en-US').format(n);

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
    await this.statsDrawn();
    return analysis;
  }

  /**
   * Waits until the statistics views are drawn, not only computed: they come in a chunk of their own
   * (src/ui/stats/StatsPanel.tsx) whose placeholder stands in until it has arrived.
   */
  async statsDrawn(): Promise<void> {
    await expect(this.statsPanel).toHaveAttribute('data-status', 'done');
    await expect(this.page.getByTestId('stats-views-loading')).toHaveCount(0);
  }

  analysisSettled(): Promise<TaskState<AnalysisResult>> {
    return this.page.evaluate(() => {
      const api = window.__mergeStudio;
      if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
      return api.analysisSettled();
    });
  }

  studio(): Promise<StudioData> {
    return this.page.evaluate(() => {
      const api = window.__mergeStudio;
      if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
      return api.studio();
    });
  }

  /** Lets `after` more reads of the engine worker pass, then holds the job there until openReads(). */
  holdReads(after: number): Promise<void> {
    return this.page.evaluate((n) => {
      const api = window.__mergeStudio;
      if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
      return api.holdReads(n);
    }, after);
  }

  openReads(): Promise<void> {
    return this.page.evaluate(() => {
      const api = window.__mergeStudio;
      if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
      return api.openReads();
    });
  }

  async mergedFile(folder: string, name: string): Promise<Buffer> {
    const base64 = await this.page.evaluate(
      ({ folder, name }) => {
        const api = window.__mergeStudio;
        if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
        return api.mergedFileBase64(folder, name);
      },
      { folder, name },
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

  /** Names of the files in one merge subfolder of OPFS. */
  opfsFiles(folder: string): Promise<string[]> {
    return this.page.evaluate(async (name) => {
      const root = await navigator.storage.getDirectory();
      const merges = await root.getDirectoryHandle('merges', { create: true });
      const dir = await merges.getDirectoryHandle(name);
      const names: string[] = [];
      for await (const key of dir.keys()) names.push(key);
      return names.sort();
    }, folder);
  }

  /**
   * Resolves once the statistics pass for exactly these agents has finished: an earlier pass for
   * fewer agents may still be the settled one right after a model is added.
   */
  async analysisOf(agentLabels: string[]): Promise<TaskState<AnalysisResult>> {
    await expect
      .poll(async () => {
        const data = await this.studio();
        return { labels: data.analysisLabels, status: data.analysis.status };
      })
      .toEqual({ labels: agentLabels, status: 'done' });
    await this.statsDrawn();
    return this.analysisSettled();
  }

  /** One preflight fact of a model card, e.g. modelFact('model-base', 'shards'). */
  modelFact(card: string, fact: 'bytes' | 'parameters' | 'dtypes' | 'tensors' | 'shards'): Locator {
    return this.page.getByTestId(`${card}-${fact}`);
  }

  /** Removes every agent through its card's Remove button, leaving the base. */
  async removeAllAgents(): Promise<void> {
    for (let left = (await this.studio()).models.filter((m) => m.role === 'agent').length; left > 0; left--) {
      await this.page.getByTestId('model-agent-0-remove').click();
      await expect(this.page.getByTestId(`model-agent-${left - 1}`)).toHaveCount(0);
    }
  }

  /** Replaces the base with a folder on disk, through the plain folder-upload input. */
  async loadBaseFolder(dir: string): Promise<void> {
    await this.page.getByTestId('model-base-folder-input').setInputFiles(dir);
  }

  /** Adds an agent from a folder on disk, through the plain folder-upload input. */
  async addAgentFolder(dir: string): Promise<void> {
    await this.page.getByTestId('model-new-agent-folder-input').setInputFiles(dir);
  }

  /** From the demo, swaps in a base and agents from folders on disk, each through its folder input. */
  async loadFolders(base: string, agents: readonly string[]): Promise<void> {
    await this.openDemo();
    await this.removeAllAgents();
    await this.loadBaseFolder(base);
    for (const agent of agents) await this.addAgentFolder(agent);
  }

  async selectMethod(method: MethodName): Promise<void> {
    await this.page.getByTestId('method-select').selectOption(method);
  }

  /** Checks that the statistics panel shows these totals, per agent and in the per-layer sum row. */
  async expectTotalsShown(totals: ModelStats, agentLabels: string[]): Promise<void> {
    const page = this.page;
    await expect(page.getByTestId('stats-numel')).toHaveText(count(totals.numel));
    await expect(page.getByTestId('layer-row-sum').getByTestId('layer-numel')).toHaveText(
      count(totals.numel),
    );
    for (const [t, agent] of agentLabels.entries()) {
      await expect(page.getByTestId(`stats-changed-${agent}`)).toHaveText(count(at(totals.changed, t)));
      await expect(page.getByTestId(`stats-unique-${agent}`)).toHaveText(count(at(totals.unique, t)));
      await expect(page.getByTestId(`stats-shared-${agent}`)).toHaveText(count(at(totals.shared, t)));
      await expect(page.getByTestId('layer-row-sum').getByTestId(`layer-agent-${agent}`)).toHaveText(
        `${count(at(totals.changed, t))} / ${count(at(totals.unique, t))}`,
      );
    }
    for (const [c, n] of totals.counts.entries())
      await expect(page.getByTestId(`stats-count-${c}`)).toHaveText(count(n));
    await expect(page.getByTestId('stats-sign-conflicts')).toHaveText(count(totals.signConflicts));
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

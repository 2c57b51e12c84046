// Page object for the studio's analysis views: the module-type table, the tensor table's filters and
// drill-downs, the merge branch preview and the agents' derivation samples.
import { expect, type Locator, type Page } from '@playwright/test';
import type { AnalysisResult } from '../src/driver/job.ts';
import type { StudioData, TaskState } from '../src/state/studio-slice.ts';
import { must } from '../src/io/checked.ts';

export class AnalysisPage {
  readonly statsPanel: Locator;
  readonly mergePanel: Locator;
  readonly moduleTable: Locator;
  readonly moduleSum: Locator;
  readonly tensorRows: Locator;
  readonly filterStatus: Locator;
  readonly filterShown: Locator;
  readonly filterTotal: Locator;
  readonly filterClear: Locator;
  readonly filterText: Locator;
  readonly filterLayer: Locator;
  readonly filterModule: Locator;

  constructor(readonly page: Page) {
    this.statsPanel = page.getByTestId('stats-panel');
    this.mergePanel = page.getByTestId('merge-panel');
    this.moduleTable = page.getByTestId('module-table');
    this.moduleSum = page.getByTestId('module-row-sum');
    this.tensorRows = page.getByTestId('tensor-row');
    this.filterStatus = page.getByTestId('tensor-filter-status');
    this.filterShown = page.getByTestId('tensor-filter-shown');
    this.filterTotal = page.getByTestId('tensor-filter-total');
    this.filterClear = page.getByTestId('tensor-filter-clear');
    this.filterText = page.getByTestId('tensor-filter-text');
    this.filterLayer = page.getByTestId('tensor-filter-layer');
    this.filterModule = page.getByTestId('tensor-filter-module');
  }

  /** Opens the app on the demo and waits for its statistics pass and compatibility check. */
  async openDemo(): Promise<AnalysisResult> {
    await this.page.goto('/');
    const analysis = await this.page.evaluate(() => {
      const api = window.__mergeStudio;
      if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
      return api.analysisSettled();
    });
    expect(analysis.status).toBe('done');
    await expect(this.statsPanel).toHaveAttribute('data-status', 'done');
    // The views come in a chunk of their own (src/ui/stats/StatsPanel.tsx): wait until it is drawn.
    await expect(this.page.getByTestId('stats-views-loading')).toHaveCount(0);
    return must((analysis as TaskState<AnalysisResult>).result, 'the demo analysis result');
  }

  studio(): Promise<StudioData> {
    return this.page.evaluate(() => {
      const api = window.__mergeStudio;
      if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
      return api.studio();
    });
  }

  layerButton(layer: string): Locator {
    return this.page.getByTestId(`layer-filter-${layer.replace(/[^A-Za-z0-9_-]/g, '_')}`);
  }

  moduleButton(module: string): Locator {
    return this.page.getByTestId(`module-filter-${module}`);
  }

  /** The data-name of every row the tensor table shows. */
  async shownTensors(): Promise<string[]> {
    return this.tensorRows.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-name') ?? ''));
  }

  derivation(agent: number): Locator {
    return this.page.getByTestId(`model-agent-${agent}-derivation`);
  }

  derivationWarning(agent: number): Locator {
    return this.page.getByTestId(`model-agent-${agent}-derivation-warning`);
  }

  branch(name: 'unchanged' | 'unique' | 'shared'): Locator {
    return this.page.getByTestId(`branch-${name}`);
  }

  async addAgentFiles(files: { name: string; buffer: Buffer }[]): Promise<void> {
    await this.page
      .getByTestId('model-new-agent-files-input')
      .setInputFiles(
        files.map((f) => ({ name: f.name, mimeType: 'application/octet-stream', buffer: f.buffer })),
      );
  }
}

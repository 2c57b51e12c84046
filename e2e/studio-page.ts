// Page object for the studio shell: locators by data-testid and the typed window test API.
import { expect, type Locator, type Page } from '@playwright/test';
import type { GpuState, WorkerProbeState } from '../src/state/gpu-slice.ts';
import type { GpuKeyLimits } from '../src/worker/probe.ts';

export class StudioPage {
  readonly header: Locator;
  readonly gpuPanel: Locator;
  readonly status: Locator;
  readonly message: Locator;
  readonly workerProbeButton: Locator;
  readonly workerProbe: Locator;

  constructor(readonly page: Page) {
    this.header = page.getByTestId('app-header');
    this.gpuPanel = page.getByTestId('gpu-panel');
    this.status = page.getByTestId('gpu-status');
    this.message = page.getByTestId('gpu-message');
    this.workerProbeButton = page.getByTestId('worker-probe-run');
    this.workerProbe = page.getByTestId('worker-probe');
  }

  /**
   * Loads the app, waits until GPU detection and the start-up self-test have finished, and opens the
   * engine details behind the header's engine chip (where the GPU panel lives).
   */
  async open(): Promise<GpuState> {
    await this.page.goto('/');
    await expect(this.status).not.toHaveAttribute('data-status', 'probing');
    const chip = this.page.getByTestId('engine-chip');
    if ((await chip.getAttribute('aria-expanded')) !== 'true') await chip.click();
    await expect(this.gpuPanel).toBeVisible();
    return this.gpuState();
  }

  /** The store's gpu slice once settled, read through window.__mergeStudio. */
  gpuState(): Promise<GpuState> {
    return this.page.evaluate(() => {
      const api = window.__mergeStudio;
      if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
      return api.gpuSettled();
    });
  }

  /** The value cell of one fact row, e.g. 'gpu-vendor' or 'probe-mismatches'. */
  fact(testId: string): Locator {
    return this.page.getByTestId(testId);
  }

  limit(name: keyof GpuKeyLimits): Locator {
    return this.page.getByTestId(`gpu-limit-${name}`);
  }

  /** Clicks the worker self-test button and waits for the worker to answer. */
  async runWorkerProbeFromUi(): Promise<void> {
    await this.workerProbeButton.click();
    await expect(this.workerProbe).toHaveAttribute('data-status', /^(done|error)$/);
  }

  runWorkerProbeViaApi(): Promise<WorkerProbeState> {
    return this.page.evaluate(() => {
      const api = window.__mergeStudio;
      if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
      return api.runWorkerProbe();
    });
  }
}

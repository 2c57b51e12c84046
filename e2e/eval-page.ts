// Page object for the Evaluate step (src/ui/eval): probes, options, candidate merges, the run and its
// result as data.
import { expect, type Locator, type Page } from '@playwright/test';
import type { MethodName } from '../src/methods/types.ts';
import type { EvalResult } from '../src/worker/protocol.ts';

export class EvalPage {
  readonly panel: Locator;
  readonly probeInput: Locator;
  readonly maxNewTokens: Locator;
  readonly run: Locator;
  readonly cancel: Locator;
  readonly result: Locator;
  readonly error: Locator;
  readonly candidates: Locator;

  constructor(readonly page: Page) {
    this.panel = page.getByTestId('eval-panel');
    this.probeInput = page.getByTestId('eval-probe-input');
    this.maxNewTokens = page.getByTestId('eval-max-new-tokens');
    this.run = page.getByTestId('eval-run');
    this.cancel = page.getByTestId('eval-cancel');
    this.result = page.getByTestId('eval-result');
    this.error = page.getByTestId('eval-error');
    this.candidates = page.getByTestId('eval-candidates');
  }

  /**
   * Adds a candidate merge: the method, then each input by its test id's suffix after `eval-cand-`
   * (`r`, `density-agent-0`), starting from the method's defaults; checks the Add button's name.
   */
  async addCandidate(method: MethodName, values: Record<string, string>, label: string): Promise<void> {
    await this.candidates.getByTestId('eval-cand-method').selectOption(method);
    for (const [input, value] of Object.entries(values))
      await this.candidates.getByTestId(`eval-cand-${input}`).fill(value);
    const add = this.candidates.getByTestId('eval-cand-add');
    await expect(add).toHaveText(`Add ${label}`);
    await add.click();
  }

  /** Gives the probe files (paths on disk) through the panel's file input. */
  async giveProbes(...paths: string[]): Promise<void> {
    await this.probeInput.setInputFiles(paths);
    await expect(this.page.getByTestId('eval-probe-files').locator('li')).toHaveCount(paths.length);
  }

  /** The result the studio shows, as the JSON its `data-json` carries. */
  async resultJson(timeout = 120_000): Promise<EvalResult> {
    await expect(this.panel).toHaveAttribute('data-status', /^(done|error)$/, { timeout });
    await expect(this.error).toHaveCount(0);
    const json = await this.result.getAttribute('data-json');
    if (json === null) throw new Error('eval-result has no data-json');
    return JSON.parse(json) as EvalResult;
  }
}

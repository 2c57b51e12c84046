// Page object for the tensor view and the element inspector: their controls by data-testid, and the
// inspect slice of the window test API (the engine's block counts of the view).
import { expect, type Locator, type Page } from '@playwright/test';
import type { ElementExplanation, MaskViewResult } from '../src/driver/tensor-view.ts';
import { must } from '../src/io/checked.ts';

/** The inspector's data-json, exactly the shape issue 8 fixes. */
export type InspectorJson = Pick<
  ElementExplanation,
  'tensor' | 'index' | 'method' | 'base' | 'agents' | 'contributors' | 'lambda' | 'merged'
>;

/** A view's result with its grid as a plain array (typed arrays do not cross page.evaluate). */
export type MaskJson = Omit<MaskViewResult, 'grid'> & { grid: number[] };

export class InspectPage {
  readonly panel: Locator;
  readonly view: Locator;
  readonly tensorInput: Locator;
  readonly indexInput: Locator;
  readonly run: Locator;
  readonly result: Locator;

  constructor(readonly page: Page) {
    this.panel = page.getByTestId('inspect-panel');
    this.view = page.getByTestId('tensor-view');
    this.tensorInput = page.getByTestId('inspector-tensor');
    this.indexInput = page.getByTestId('inspector-index');
    this.run = page.getByTestId('inspector-run');
    this.result = page.getByTestId('inspector-result');
  }

  /** Explains one element through the inputs and the button; resolves with the result's data-json. */
  async explain(tensor: string, index: number, timeout = 30_000): Promise<InspectorJson> {
    await this.tensorInput.fill(tensor);
    await this.indexInput.fill(String(index));
    await this.run.click();
    await expect(this.page.getByTestId('inspector')).toHaveAttribute('data-status', 'done', { timeout });
    const json = JSON.parse((await this.result.getAttribute('data-json')) ?? 'null') as InspectorJson;
    expect([json.tensor, json.index]).toEqual([tensor, index]);
    return json;
  }

  /** Opens a tensor in the tensor view and waits for its grid. */
  async open(tensor: string): Promise<MaskJson> {
    await this.tensorInput.fill(tensor);
    await this.page.getByTestId('tensor-view-open').click();
    return this.settled((m) => m.tensor === tensor);
  }

  /** Waits until the view holds a drawn grid that `accept` takes, and returns it. */
  async settled(accept: (mask: MaskJson) => boolean = () => true): Promise<MaskJson> {
    // A holder, not a local: the poll's callback sets it, which control flow cannot see.
    const last: { found: MaskJson | null } = { found: null };
    await expect
      .poll(
        async () => {
          const mask = await this.mask();
          last.found = mask && accept(mask) ? mask : null;
          return last.found !== null;
        },
        { timeout: 60_000 },
      )
      .toBe(true);
    return must(last.found, 'a drawn grid the test accepts');
  }

  mask(): Promise<MaskJson | null> {
    return this.page.evaluate(() => {
      const api = window.__mergeStudio;
      if (!api) throw new Error('window.__mergeStudio is missing: is this an e2e or development build?');
      const { mask } = api.inspect();
      if (mask.status !== 'done' || !mask.result) return null;
      return { ...mask.result, grid: Array.from(mask.result.grid) };
    });
  }
}

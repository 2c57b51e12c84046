// NaN and ±Inf in the studio (SPEC.md "Non-finite values"): a base and two agents, one of which
// holds NaN and +Inf where the others do not, and a −Inf that every model shares (kept, not counted).
// The statistics list where they are, per tensor and model, the tensor view counts them apart from
// every class, and a merge stops naming the tensor.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { floatTensor, rng, writeModelFolder } from '../src/test/fixtures.ts';
import { expect, test as base } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';
import { InspectPage } from './inspect-page.ts';
import { maskLayout } from '../src/methods/mask-geometry.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

const AGENTS = ['coder', 'writer'] as const;

test('shows NaN / ±Inf per tensor and model, and a merge of those tensors stops', async ({
  workflow,
  page,
}, testInfo) => {
  const root = await mkdtemp(join(tmpdir(), 'merge-studio-nonfinite-'));
  try {
    const random = rng(77);
    const values = (n: number): Float32Array => Float32Array.from({ length: n }, () => random() - 0.5);
    const baseA = values(64);
    const baseB = values(32);
    baseA[7] = -Infinity;
    const coder: [Float32Array, Float32Array] = [
      baseA.map((x, i) => (i % 5 === 0 && i !== 0 ? x + 0.25 : x)),
      baseB.slice(),
    ];
    const writer: [Float32Array, Float32Array] = [
      baseA.map((x, i) => (i % 3 === 0 ? x - 0.5 : x)),
      baseB.map((x) => x + 0.125),
    ];
    // The coder holds NaN at three elements of `a` and +Inf at one of `b`; −Inf at a[7] is everyone's.
    for (const i of [1, 2, 4]) coder[0][i] = NaN;
    coder[1][9] = Infinity;
    writer[0][7] = -Infinity;
    coder[0][7] = -Infinity;
    const base: [Float32Array, Float32Array] = [baseA, baseB];
    const models = { base, coder, writer };
    for (const [name, [a, b]] of Object.entries(models))
      await writeModelFolder(join(root, name), [
        floatTensor('model.layers.0.a.weight', 'F32', [8, 8], a),
        floatTensor('model.layers.0.b.weight', 'F32', [32], b),
      ]);

    await workflow.loadFolders(
      join(root, 'base'),
      AGENTS.map((agent) => join(root, agent)),
    );
    await workflow.analysisOf([...AGENTS]);

    const panel = page.getByTestId('nonfinite-panel');
    await expect(panel).toBeVisible();
    await expect(page.getByTestId('nonfinite-total')).toContainText('4 elements in 2 tensors');
    await expect(page.getByTestId('nonfinite-row-model_layers_0_a_weight')).toContainText('3');
    await expect(page.getByTestId('nonfinite-row-model_layers_0_b_weight')).toContainText('1');
    await expect(page.getByTestId('nonfinite-model-0')).toHaveText('0');
    await expect(page.getByTestId('nonfinite-model-1')).toHaveText('4');
    await expect(page.getByTestId('nonfinite-model-2')).toHaveText('0');
    await workflow.shoot(panel, 'studio-nonfinite', testInfo);

    // The tensor view of `a`, one element per block: the coder's three NaNs are non-finite, each in
    // no other counter; the −Inf every model holds is unchanged.
    const inspect = new InspectPage(page);
    const mask = await inspect.open('model.layers.0.a.weight');
    expect([mask.geometry.blockRows, mask.geometry.blockCols]).toEqual([1, 1]);
    const layout = maskLayout(AGENTS.length);
    const counters = (e: number): number[] => mask.grid.slice(e * layout.stride, (e + 1) * layout.stride);
    for (const e of [1, 2, 4]) {
      expect(counters(e)[layout.nonFinite], `element ${e}`).toBe(1);
      expect(counters(e).reduce((a, b) => a + b, 0)).toBe(1);
    }
    expect(counters(7).every((v) => v === 0)).toBe(true);
    const flagged = Array.from({ length: 64 }, (_, e) => counters(e)[layout.nonFinite]);
    expect(flagged.filter((v) => v === 1)).toHaveLength(3);
    await expect(page.getByTestId('tensor-mask-legend-nonfinite')).toContainText('(3 in view)');
    await workflow.shoot(inspect.view, 'tensor-view-nonfinite', testInfo);

    await workflow.selectMethod('ram');
    await workflow.mergeButton.click();
    await expect(page.getByTestId('merge-error')).toContainText(/model\.layers\.0\.(a|b)\.weight/, {
      timeout: 45_000,
    });
    await expect(page.getByTestId('merge-error')).toContainText('NaN or ±Inf');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

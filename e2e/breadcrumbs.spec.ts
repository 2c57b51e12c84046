// Model Breadcrumbs in the studio: the method and its per-agent gamma come from the method registry
// (fields, help), the merge on WebGPU equals the CPU reference of the same recipe within one bf16 ulp
// per element (the GPU sums in f32, the reference in f64), and axe finds nothing in the panel.
import { decodeFloats } from '../src/format/dtype.ts';
import { readSafetensorsHeader } from '../src/format/safetensors.ts';
import { memorySource } from '../src/io/source.ts';
import { axeViolations } from './axe.ts';
import { expect, test as base } from './fixtures.ts';
import { referenceMerge } from './studio-reference.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

/** Per tensor, elements further apart than one bf16 ulp of the larger magnitude. */
async function farApart(got: Uint8Array, want: Uint8Array): Promise<string[]> {
  const header = await readSafetensorsHeader(memorySource('want', want));
  const far: string[] = [];
  for (const t of header.tensors) {
    const count = (t.end - t.begin) / 2;
    const at = header.dataStart + t.begin;
    const a = decodeFloats('BF16', got.subarray(at, at + 2 * count), count);
    const b = decodeFloats('BF16', want.subarray(at, at + 2 * count), count);
    a.forEach((x, i) => {
      const ulp = 2 ** (Math.floor(Math.log2(Math.max(Math.abs(x), Math.abs(b[i]!), 2 ** -126))) - 7);
      if (!(Math.abs(x - b[i]!) <= ulp)) far.push(`${t.name}[${i}] ${x} ≠ ${b[i]}`);
    });
  }
  return far;
}

test('breadcrumbs_ties: gamma per agent from the registry, merged as the CPU reference', async ({
  workflow,
  page,
}, testInfo) => {
  const [, want] = await Promise.all([workflow.openDemo(), referenceMerge('breadcrumbs_ties')]);
  await workflow.selectMethod('breadcrumbs_ties');
  for (const agent of ['key', 'door', 'gems'])
    await expect(page.getByTestId(`param-gamma-${agent}`)).toHaveValue('0.01');
  await expect(workflow.mergePanel).toContainText('dropped as outliers');
  expect(await axeViolations(page, '[data-testid="merge-panel"]')).toEqual([]);
  await workflow.shoot(workflow.mergePanel, 'merge-breadcrumbs', testInfo);

  await workflow.merge(1);
  const record = (await workflow.studio()).merges[0]!;
  const yaml = await workflow.mergedFile(record.folder, 'mergekit_config.yml');
  expect(yaml.equals(Buffer.from(want.get('mergekit_config.yml')!))).toBe(true);
  expect(yaml.toString()).toContain('gamma: 0.01');
  const weights = await workflow.mergedFile(record.folder, 'model.safetensors');
  expect(weights.length).toBe(want.get('model.safetensors')!.length);
  expect((await farApart(weights, want.get('model.safetensors')!)).slice(0, 5)).toEqual([]);
});

// Two merges side by side: parameters, the elements per branch (RAM's statistics and what TIES summed,
// each equal to counts made here in Node from the demo's files), the share of elements that differ per layer (equal to a count made here
// from the two exported files), and arena scores with their deltas.
import type { Locator } from '@playwright/test';
import { decodeFloats } from '../src/format/dtype.ts';
import { readSafetensorsHeader } from '../src/format/safetensors.ts';
import { must } from '../src/io/checked.ts';
import { defaultParams } from '../src/methods/defaults.ts';
import { emptyBranchCounts } from '../src/methods/tensors.ts';
import { topKTaus, type TensorValues } from '../src/methods/reference.ts';
import { oracleBranches } from '../src/test/branch-oracle.ts';
import { memorySource } from '../src/io/source.ts';
import { axeViolations } from './axe.ts';
import { expect, test as base } from './fixtures.ts';
import { DEMO_AGENTS, demoFile } from './studio-reference.ts';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

/** Elements whose bits differ between two files' tensors of one name (both are bf16 here). */
async function differing(a: Buffer, b: Buffer): Promise<number> {
  const [ha, hb] = await Promise.all([
    readSafetensorsHeader(memorySource('a', a)),
    readSafetensorsHeader(memorySource('b', b)),
  ]);
  let count = 0;
  for (const ta of ha.tensors) {
    const tb = hb.tensors.find((t) => t.name === ta.name)!;
    expect([ta.dtype, tb.dtype]).toEqual(['BF16', 'BF16']);
    for (let at = 0; at < ta.end - ta.begin; at += 2)
      if (a.readUInt16LE(ha.dataStart + ta.begin + at) !== b.readUInt16LE(hb.dataStart + tb.begin + at))
        count++;
  }
  return count;
}

/** Branch counts over the demo's bf16 tensors at ε, straight from SPEC.md: changed iff |τ| > ε. */
async function demoBranches(epsilon: number): Promise<Record<string, number>> {
  const files = ['base', ...DEMO_AGENTS].map((m) => Buffer.from(demoFile(m, 'model.safetensors')));
  const headers = await Promise.all(files.map((f, m) => readSafetensorsHeader(memorySource(`${m}`, f))));
  const bf16 = (file: Buffer, at: number): number => {
    const bits = Buffer.alloc(4);
    bits.writeUInt16LE(file.readUInt16LE(at), 2);
    return bits.readFloatLE(0);
  };
  const counts: Record<string, number> = {
    numel: 0,
    unchanged: 0,
    unique: 0,
    shared: 0,
    'sign-conflicts': 0,
  };
  for (const label of DEMO_AGENTS) counts[`unique-${label}`] = 0;
  const count = (key: string): void => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  for (const tensor of headers[0]!.tensors) {
    const at = headers.map((h) => {
      const t = h.tensors.find((u) => u.name === tensor.name)!;
      return h.dataStart + t.begin;
    });
    for (let i = 0; i < (tensor.end - tensor.begin) / 2; i++) {
      const base = bf16(files[0]!, at[0]! + 2 * i);
      const taus = DEMO_AGENTS.map((_, t) => bf16(files[t + 1]!, at[t + 1]! + 2 * i) - base);
      const changed = taus.map((tau, t) => [tau, t] as const).filter(([tau]) => Math.abs(tau) > epsilon);
      count('numel');
      const [only] = changed;
      if (changed.length === 0) count('unchanged');
      else if (changed.length === 1 && only) {
        count('unique');
        count(`unique-${DEMO_AGENTS[only[1]]}`);
      } else {
        count('shared');
        if (changed.some(([tau]) => tau > 0) && changed.some(([tau]) => tau < 0)) count('sign-conflicts');
      }
    }
  }
  return counts;
}

/**
 * What a TIES merge of the demo with its default parameters summed, counted here from the files: per
 * tensor the reference's top-k of τ (topKTaus), then the oracle's count of the agents on the elected side
 * (src/test/branch-oracle.ts), as the same keys as demoBranches.
 */
async function demoTiesBranches(): Promise<Record<string, number>> {
  const params = defaultParams('ties', DEMO_AGENTS.length);
  const files = ['base', ...DEMO_AGENTS].map((m) => Buffer.from(demoFile(m, 'model.safetensors')));
  const headers = await Promise.all(files.map((f, m) => readSafetensorsHeader(memorySource(`${m}`, f))));
  const kept = emptyBranchCounts(DEMO_AGENTS.length);
  const add = (into: number[], from: number[]): void =>
    from.forEach((n, i) => (into[i] = (into[i] ?? 0) + n));
  for (const tensor of must(headers[0], 'base header').tensors) {
    const slots = headers.map((h, m) => {
      const t = must(
        h.tensors.find((u) => u.name === tensor.name),
        tensor.name,
      );
      expect(t.dtype).toBe('BF16');
      const file = must(files[m], 'demo file');
      return decodeFloats(
        'BF16',
        file.subarray(h.dataStart + t.begin, h.dataStart + t.end),
        (t.end - t.begin) / 2,
      );
    });
    const values: TensorValues = {
      name: tensor.name,
      dtype: 'BF16',
      base: must(slots[0], 'base'),
      agents: slots.slice(1),
    };
    const counts = oracleBranches(topKTaus(values, params.density), params.weights, true);
    add(kept.counts, counts.counts);
    add(kept.unique, counts.unique);
    kept.signConflicts += counts.signConflicts;
  }
  const shared = kept.counts.slice(2).reduce((a, b) => a + b, 0);
  return {
    numel: kept.counts.reduce((a, b) => a + b, 0),
    unchanged: kept.counts[0] ?? 0,
    unique: kept.counts[1] ?? 0,
    ...Object.fromEntries(DEMO_AGENTS.map((label, t) => [`unique-${label}`, kept.unique[t] ?? 0])),
    shared,
    'sign-conflicts': kept.signConflicts,
  };
}

/** Each count row of the branch table holds these two numbers, and Δ is the second minus the first. */
async function expectBranches(
  compare: Locator,
  first: Record<string, number>,
  second: Record<string, number>,
): Promise<void> {
  for (const key of Object.keys(first)) {
    const row = compare.getByTestId(`compare-branch-${key}`);
    await expect(row).toHaveAttribute('data-a', String(first[key]));
    await expect(row).toHaveAttribute('data-b', String(second[key]));
    const delta = (second[key] ?? 0) - (first[key] ?? 0);
    await expect(row.locator('td').last()).toHaveText(
      `${delta >= 0 ? '+' : ''}${delta.toLocaleString('en-US')}`,
    );
  }
}

test('two merges side by side: parameters, branch counts, differing elements per layer, arena deltas', async ({
  workflow,
  page,
}, testInfo) => {
  test.setTimeout(120_000);
  await workflow.openDemo();
  await workflow.selectMethod('ram');
  await workflow.merge(1);
  await workflow.selectMethod('ties');
  await workflow.merge(2);
  await page.getByTestId('arena-run').click();
  await expect(workflow.arenaPanel).toHaveAttribute('data-status', 'done', { timeout: 90_000 });

  const compare = page.getByTestId('compare-panel');
  const [first, second] = (await workflow.studio()).merges;
  await compare.getByTestId('compare-a').selectOption(`opfs:${first!.folder}`);
  await compare.getByTestId('compare-b').selectOption(`opfs:${second!.folder}`);
  await expect(compare.getByTestId('compare-param-method')).toHaveAttribute('data-differs', 'true');
  await expect(compare.getByTestId('compare-param-method')).toContainText('ram');
  await expect(compare.getByTestId('compare-param-method')).toContainText('ties');
  await compare.getByTestId('compare-run').click();

  const sum = compare.getByTestId('compare-layer-sum');
  await expect(sum).toBeVisible();
  const expected = await differing(
    await workflow.mergedFile(first!.folder, 'model.safetensors'),
    await workflow.mergedFile(second!.folder, 'model.safetensors'),
  );
  expect(expected).toBeGreaterThan(0);
  const rows = await compare
    .getByTestId('compare-layer')
    .evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-differ'))));
  expect(rows.length).toBeGreaterThan(1);
  expect(rows.reduce((x, y) => x + y, 0)).toBe(expected);

  // Arena: the delta is the second's score minus the first's, from the scores the arena gave.
  const arena = (await workflow.studio()).arena.result!;
  const a = arena.find((r) => r.key === `merge-${first!.id}`)!.scores.mean;
  const b = arena.find((r) => r.key === `merge-${second!.id}`)!.scores.mean;
  const mean = compare.getByTestId('compare-arena-mean');
  await expect(mean).toContainText(a.toFixed(3));
  await expect(mean).toContainText(`${b - a >= 0 ? '+' : ''}${(b - a).toFixed(3)}`);

  // Branches: RAM's are the statistics at the default ε, TIES's what it summed (its top-k and sign
  // election), each counted here from the files; the two differ.
  const atDefault = await demoBranches(1e-5);
  expect(atDefault.unique).toBeGreaterThan(0);
  expect(atDefault.shared).toBeGreaterThan(0);
  const ties = await demoTiesBranches();
  expect(ties.numel).toBe(atDefault.numel);
  expect(ties.unchanged).toBeGreaterThan(atDefault.unchanged ?? 0);
  expect(ties['sign-conflicts']).toBeGreaterThan(0);
  await expectBranches(compare, atDefault, ties);
  const source = compare.getByTestId('compare-branch-source');
  await expect(source.locator('td').nth(0)).toHaveText('statistics at ε');
  await expect(source.locator('td').nth(1)).toHaveText('counted in the merge');
  // TIES does not use ε: the merge-counted column shows none.
  await expect(compare.getByTestId('compare-branch-epsilon').locator('td').nth(1)).toHaveText('—');
  await expect(compare.getByTestId('compare-branch-legend')).toBeVisible();
  expect(await axeViolations(page, '[data-testid="compare-panel"]')).toEqual([]);
  await workflow.shoot(compare.getByTestId('compare-branches'), 'compare-branches', testInfo);

  // A RAM+ merge at another ε recounts its statistics: its branches differ, and so do the deltas.
  await workflow.selectMethod('ramplus');
  await page.getByTestId('param-epsilon').fill('0.001');
  await workflow.merge(3);
  const third = (await workflow.studio()).merges[2]!;
  await compare.getByTestId('compare-b').selectOption(`opfs:${third.folder}`);
  await expect(compare.getByTestId('compare-branch-epsilon')).toContainText('0.001');
  const atCoarse = await demoBranches(1e-3);
  expect(atCoarse.unchanged).toBeGreaterThan(atDefault.unchanged ?? 0);
  await expectBranches(compare, atDefault, atCoarse);
});

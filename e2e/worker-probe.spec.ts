// The self-test run again on demand in the engine's Web Worker (where merges run), on real WebGPU.
import { expect, test } from './fixtures.ts';

test('runs the self-test in a Web Worker from the button', async ({ studio, page, browserErrors }) => {
  await studio.open();

  await studio.runWorkerProbeFromUi();

  // No worker of its own: the one worker of the page is the engine's, which ran it.
  expect(page.workers().map((worker) => worker.url())).toEqual([expect.stringMatching(/\/worker[-.]/)]);
  await expect(studio.workerProbe).toHaveAttribute('data-status', 'done');
  await expect(studio.fact('worker-probe-ok')).toHaveText('Passed');
  await expect(studio.fact('worker-probe-elements')).toHaveText('4,099');
  await expect(studio.fact('worker-probe-mismatches')).toHaveText('0');
  await expect(studio.workerProbeButton).toBeEnabled();
  expect(browserErrors.messages).toEqual([]);
});

test('gives the same result through the test API', async ({ studio }) => {
  const gpu = await studio.open();

  const worker = await studio.runWorkerProbeViaApi();

  expect(worker).toMatchObject({
    status: 'done',
    message: null,
    result: { ok: true, elements: 4099, mismatches: 0, firstMismatch: null },
  });
  expect(worker.result?.elements).toBe(gpu.probe?.elements);
});

// The GPU status panel in headless Chromium: the real SwiftShader adapter and self-test, the layout
// at 1280x800, and the advice shown when WebGPU or an adapter is missing.
import { expect, test } from './fixtures.ts';

test('shows the SwiftShader adapter and a passing self-test', async ({ studio, browserErrors }) => {
  const gpu = await studio.open();

  await expect(studio.status).toHaveAttribute('data-status', 'ready');
  await expect(studio.fact('gpu-vendor')).toHaveText('google');
  await expect(studio.fact('gpu-architecture')).toHaveText('swiftshader');
  await expect(studio.fact('gpu-fallback')).toHaveText(/^Yes/);
  await expect(studio.fact('gpu-shader-f16')).toHaveText(/^Not available/);
  await expect(studio.limit('maxComputeWorkgroupsPerDimension')).toHaveText('65,535');
  const bindingLimit = Number(await studio.limit('maxStorageBufferBindingSize').getAttribute('data-value'));
  expect(bindingLimit).toBeGreaterThanOrEqual(128 * 2 ** 20);

  await expect(studio.fact('probe-ok')).toHaveText('Passed');
  await expect(studio.fact('probe-elements')).toHaveText('4,099');
  await expect(studio.fact('probe-mismatches')).toHaveText('0');
  await expect(studio.fact('probe-ms')).toHaveText(/^[\d.]+ m?s$/);

  expect(gpu.status).toBe('ready');
  expect(gpu.adapter).toMatchObject({ vendor: 'google', architecture: 'swiftshader' });
  expect(gpu.probe).toMatchObject({ ok: true, elements: 4099, mismatches: 0, firstMismatch: null });
  expect(gpu.shaderF16).toBe(false);
  expect(gpu.limits?.maxStorageBufferBindingSize).toBe(bindingLimit);
  expect(browserErrors.messages).toEqual([]);
});

test('fits 1280x800 with semantic headings and a visible keyboard focus', async ({ studio, page }) => {
  await studio.open();

  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Merge Studio');
  await expect(page.getByRole('heading', { level: 2, name: 'WebGPU status' })).toBeVisible();
  // Scoped to the GPU panel: the studio's panels below it have headings of their own.
  await expect(studio.gpuPanel.getByRole('heading', { level: 3 })).toHaveText([
    'Adapter',
    'Adapter limits',
    'Self-test',
    /^Features/,
  ]);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  const panel = await studio.gpuPanel.boundingBox();
  expect(panel?.width).toBeLessThanOrEqual(1280);

  await page.keyboard.press('Tab');
  await expect(studio.workerProbeButton).toBeFocused();
  const focusRing = await studio.workerProbeButton.evaluate((element) => getComputedStyle(element).boxShadow);
  expect(focusRing).not.toBe('none');
  await expect(page.getByRole('button', { name: 'Run in a Web Worker' })).toBeEnabled();
});

test('explains what to do when the browser has no WebGPU', async ({ studio, page }) => {
  await page.addInitScript(() => {
    Object.defineProperty(Navigator.prototype, 'gpu', { configurable: true, get: () => undefined });
  });
  const gpu = await studio.open();

  await expect(studio.status).toHaveAttribute('data-status', 'unavailable');
  await expect(studio.message).toContainText('does not offer WebGPU');
  await expect(studio.message).toContainText('Chrome, Edge');
  await expect(studio.fact('gpu-vendor')).toHaveCount(0);
  expect(gpu).toMatchObject({ status: 'unavailable', adapter: null, probe: null });
});

test('explains what to do when no adapter is granted', async ({ studio, page }) => {
  await page.addInitScript(() => {
    GPU.prototype.requestAdapter = async () => null;
  });
  await studio.open();

  await expect(studio.status).toHaveAttribute('data-status', 'unavailable');
  await expect(studio.message).toContainText('granted no GPU adapter');
  await expect(studio.message).toContainText('hardware acceleration');
  await expect(studio.workerProbeButton).toHaveCount(0);
});

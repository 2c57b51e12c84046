// The app reaches no origin but its own: every request is logged, and the CSP blocks the rest.
import { expect, test } from './fixtures.ts';

test('requests nothing from any other origin', async ({ studio, network, baseURL }) => {
  await studio.open();
  await studio.runWorkerProbeFromUi();
  await expect(studio.workerProbe).toHaveAttribute('data-status', 'done');

  const appOrigin = new URL(baseURL ?? '').origin;
  expect(['127.0.0.1', 'localhost']).toContain(new URL(appOrigin).hostname);
  // The log must hold the page, its bundle and the engine worker's script, or it proves nothing.
  expect(network.urls.some((url) => new URL(url).pathname === '/')).toBe(true);
  expect(network.urls.some((url) => /\/assets\/index-[\w-]+\.js$/.test(url))).toBe(true);
  expect(network.urls.some((url) => /\/assets\/worker-[\w-]+\.js$/.test(url))).toBe(true);
  const foreign = network.urls.filter((url) => new URL(url).origin !== appOrigin);
  expect(foreign).toEqual([]);
});

test('its Content Security Policy blocks connections to other origins', async ({ studio, page, network }) => {
  const response = await page.goto('/');
  const header = response?.headers()['content-security-policy'];
  expect(header).toContain("default-src 'self'");
  expect(header).toContain("connect-src 'self'");
  await studio.gpuState();
  // The static build's meta policy must not drift from the server's (vite.config.ts).
  const meta = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
  expect(meta).toBe(header);
  // 192.0.2.0/24 is reserved for documentation, so nothing could answer even without the CSP. The
  // violation event is queued apart from the fetch's rejection: the page keeps every one it sees and
  // the test waits for the blocked URL among them, not for a fixed time.
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as ViolationsWindow).__cspViolations = seen;
    document.addEventListener('securitypolicyviolation', (event) => seen.push(event.blockedURI));
  });
  const outcome = await page.evaluate(() =>
    fetch('http://192.0.2.1/weights.safetensors').then(
      () => 'fetched',
      () => 'refused',
    ),
  );
  expect(outcome).toBe('refused');
  await expect
    .poll(() => page.evaluate(() => (window as ViolationsWindow).__cspViolations ?? []))
    .toContain('http://192.0.2.1/weights.safetensors');
  expect(network.urls.filter((url) => url.includes('192.0.2.1'))).toEqual([]);
});

/** The securitypolicyviolation events the CSP test collects in the page. */
type ViolationsWindow = Window & { __cspViolations?: string[] };

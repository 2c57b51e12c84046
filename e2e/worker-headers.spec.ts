// The engine worker under the same Content Security Policy as the page: a meta tag does not reach a
// worker, so `vite preview` must send the header with the worker's script, and public/_headers must
// carry it to static hosts.
import { expect, test } from './fixtures.ts';
import { WorkflowPage } from './workflow-page.ts';

test('serves the engine worker script with the page CSP header, and ships _headers with it', async ({
  studio,
  page,
}) => {
  const workerScripts: Promise<Record<string, string>>[] = [];
  page.context().on('response', (response) => {
    if (/\/assets\/worker-[\w-]+\.js$/.test(new URL(response.url()).pathname))
      workerScripts.push(Promise.resolve(response.headers()));
  });
  const response = await page.goto('/');
  const policy = response?.headers()['content-security-policy'];
  expect(policy).toContain("connect-src 'self'");
  await studio.open();
  await expect.poll(() => workerScripts.length, { timeout: 30_000 }).toBeGreaterThan(0);
  for (const headers of await Promise.all(workerScripts))
    expect(headers['content-security-policy']).toBe(policy);
  const file = await page.evaluate(async () => (await fetch('/_headers')).text());
  expect(file).toContain(`  Content-Security-Policy: ${policy}\n`);
});

test('serves the shard hash worker, started by a merge, with the page CSP header', async ({ page }) => {
  const hashScripts: Record<string, string>[] = [];
  page.context().on('response', (response) => {
    if (/\/assets\/hash-worker-[\w-]+\.js$/.test(new URL(response.url()).pathname))
      hashScripts.push(response.headers());
  });
  const workflow = new WorkflowPage(page);
  await workflow.openDemo();
  const policy = (await page.request.get('/')).headers()['content-security-policy'];
  expect(policy).toContain("connect-src 'self'");
  await workflow.merge(1);
  expect(hashScripts.length).toBe(1);
  expect(hashScripts[0]!['content-security-policy']).toBe(policy);
});

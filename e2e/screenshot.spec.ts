// A 1280x800 screenshot of the shell after both self-tests, for review and for the docs.
import { copyFile, mkdir } from 'node:fs/promises';
import { expect, test } from './fixtures.ts';

const DOCS_SCREENSHOT = 'docs/screenshots/shell.png';

test('screenshot at 1280x800', async ({ studio, page }, testInfo) => {
  await studio.open();
  await studio.runWorkerProbeFromUi();
  await expect(studio.status).toHaveAttribute('data-status', 'ready');
  // Clicking scrolled the button into view and focused it; shoot the page as it first appears.
  await page.evaluate(() => {
    (document.activeElement as HTMLElement | null)?.blur();
    window.scrollTo(0, 0);
  });

  const path = testInfo.outputPath('shell-1280x800.png');
  const png = await page.screenshot({ path });
  await testInfo.attach('shell', { path, contentType: 'image/png' });

  // PNG: the IHDR chunk holds width and height as big-endian u32 at bytes 16 and 20.
  expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 800]);
  // The docs copy changes only on request, so ordinary runs leave the working tree clean.
  if (process.env.UPDATE_DOCS_SCREENSHOTS) {
    await mkdir('docs/screenshots', { recursive: true });
    await copyFile(path, DOCS_SCREENSHOT);
  }
});

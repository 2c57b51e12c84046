// Every SVG text the statistics draw (the atlas, its ramp legend, the agent sets, the charts, the
// tensor view) against what it is drawn on, in light and in dark mode: at least 4.5:1 (WCAG AA). axe
// does not check SVG text, and a fixed dark fill once left the atlas unreadable on the dark panel.
import { expect, test as base } from '@playwright/test';
import { WorkflowPage } from './workflow-page.ts';

const test = base.extend<{ workflow: WorkflowPage }>({
  workflow: async ({ page }, use) => {
    await use(new WorkflowPage(page));
  },
});

interface Measured {
  text: string;
  fill: string;
  background: string;
  ratio: number;
}

for (const scheme of ['light', 'dark'] as const)
  test(`every SVG text is at least 4.5:1 against its background in ${scheme} mode`, async ({
    workflow,
    page,
  }) => {
    test.setTimeout(120_000);
    await page.emulateMedia({ colorScheme: scheme });
    await workflow.openDemo();
    const measured = await page.evaluate(() => {
      const rgb = (color: string): [number, number, number, number] => {
        const m = /rgba?\(([^)]+)\)/.exec(color);
        if (!m) return [0, 0, 0, 0];
        const parts = m[1]!
          .split(/[\s,/]+/)
          .filter(Boolean)
          .map(Number);
        return [parts[0]!, parts[1]!, parts[2]!, parts[3] ?? 1];
      };
      const lum = ([r, g, b]: [number, number, number, number]) =>
        [r, g, b]
          .map((v) => v / 255)
          .map((c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
          .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i]!, 0);
      const backgroundOf = (element: Element): string => {
        for (let e: Element | null = element; e; e = e.parentElement) {
          if (e instanceof SVGElement) continue;
          const color = getComputedStyle(e).backgroundColor;
          if (rgb(color)[3] > 0) return color;
        }
        return getComputedStyle(document.documentElement).backgroundColor;
      };
      const out: Measured[] = [];
      for (const text of document.querySelectorAll('svg text')) {
        const content = (text.textContent ?? '').trim();
        const box = (text as SVGTextElement).getBoundingClientRect();
        if (!content || box.width === 0 || box.height === 0) continue;
        const fill = getComputedStyle(text).fill;
        const background = backgroundOf(text);
        const [a, b] = [lum(rgb(fill)), lum(rgb(background))];
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        out.push({ text: content.slice(0, 40), fill, background, ratio: Math.round(ratio * 100) / 100 });
      }
      return out;
    });
    // The statistics draw many texts; a page with none would make this check pass vacuously.
    expect(measured.length).toBeGreaterThan(30);
    expect(measured.filter((m) => m.ratio < 4.5)).toEqual([]);
  });

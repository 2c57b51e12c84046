// Accessibility check for e2e specs: axe-core's WCAG 2 A/AA rules on the current page, the
// violations returned in a form a failing assertion can print.
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';

export interface AxeViolation {
  id: string;
  impact: string | null | undefined;
  help: string;
  targets: string[];
}

export async function axeViolations(page: Page, include?: string): Promise<AxeViolation[]> {
  let builder = new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']);
  if (include) builder = builder.include(include);
  const results = await builder.analyze();
  return results.violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    targets: v.nodes.map((n) => n.target.join(' ')),
  }));
}

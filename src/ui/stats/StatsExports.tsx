// Take the statistics away: JSON in exactly the schema of `merge-studio analyze --json` (statsJson,
// shared with the CLI), and a self-contained HTML report of what the panel draws (no weights).
import type { RefObject } from 'react';
import type { AnalysisResult } from '../../driver/job.ts';
import { statsJson } from '../../driver/stats-json.ts';
import { useStudio } from '../../state/store.ts';
import { downloadBlob, reportHtml } from './export.ts';

export function StatsExports({
  analysis,
  panel,
}: {
  analysis: AnalysisResult;
  panel: RefObject<HTMLElement | null>;
}) {
  const models = useStudio((s) => s.studio.models);
  const params = useStudio((s) => s.studio.params);
  const labels = useStudio((s) => s.studio.analysisLabels);
  const base = models.find((m) => m.role === 'base')?.label ?? 'base';
  const saveJson = (): void => {
    // The CLI names each agent by the path it was given; the studio has the label it loaded it as.
    const json = statsJson(
      analysis,
      labels,
      params.r,
      params.alpha,
      undefined,
      analysis.files,
      analysis.precision,
    );
    downloadBlob(
      new Blob([`${JSON.stringify(json, null, 2)}\n`], { type: 'application/json' }),
      'statistics.json',
    );
  };
  const saveReport = (): void => {
    const root = panel.current;
    if (!root) return;
    const parts = [...root.querySelectorAll<HTMLElement>('[data-report]')];
    const facts = `Base ${base}; agents ${labels.join(', ')}; ε = ${analysis.epsilon}; ${analysis.tensors.length} tensors. Counts are exact integers; percentages are computed from them.`;
    const html = reportHtml('Merge Studio statistics', facts, parts);
    downloadBlob(new Blob([html], { type: 'text/html' }), 'statistics-report.html');
  };
  return (
    <div className="studio-save studio-save--panel" data-export-skip="">
      <button
        type="button"
        className="button button--secondary"
        data-testid="export-stats-json"
        onClick={saveJson}
      >
        Statistics as JSON
      </button>
      <button
        type="button"
        className="button button--secondary"
        data-testid="export-stats-report"
        onClick={saveReport}
      >
        HTML report
      </button>
    </div>
  );
}

// Step 2: where the agents changed the base and where they overlap, from the worker's statistics
// pass. The views themselves live in stats/, one component per file; all but the totals come in a
// chunk of their own (recharts is most of it), fetched as soon as the panel is on the page.
import { useEffect, useRef } from 'react';
import { studioStore, useStudio } from '../../state/store.ts';
import { ErrorBox, ProgressBar } from '../studio/common.tsx';
import { ChunkPlaceholder, deferred } from '../studio/deferred.tsx';
import './analysis.css';
import { StatsExports } from './StatsExports.tsx';
import { ReadDtypeField, readDtypeText } from './ReadDtypeField.tsx';
import { TotalsTable } from './TotalsTable.tsx';
import type { AnalysisProps } from './types.ts';

const Views = deferred<AnalysisProps>(() => import('./AnalysisViews.tsx').then((m) => m.AnalysisViews));

export function StatsPanel() {
  const analysis = useStudio((s) => s.studio.analysis);
  const labels = useStudio((s) => s.studio.analysisLabels);
  const readDtype = useStudio((s) => s.studio.readDtype);
  const facts = useStudio((s) => s.studio.check.result?.precision);
  const result = analysis.result;
  const panel = useRef<HTMLElement>(null);
  // The demo's statistics are on their way from the first frame: have the views ready when they land.
  useEffect(() => void Views.preload(), []);
  return (
    <section
      ref={panel}
      className="panel"
      aria-labelledby="stats-heading"
      data-testid="stats-panel"
      data-status={analysis.status}
      aria-busy={analysis.status === 'running'}
    >
      <div className="panel__head">
        <h2 id="stats-heading">2. Where the agents changed the base</h2>
        {analysis.status === 'running' ? (
          <button
            type="button"
            className="button button--secondary"
            data-testid="stats-cancel"
            onClick={() => studioStore.getState().cancelAnalysis()}
          >
            Cancel
          </button>
        ) : (
          <button
            type="button"
            className="button button--secondary"
            data-testid="stats-run"
            onClick={() => void studioStore.getState().runAnalysis()}
          >
            Run statistics
          </button>
        )}
      </div>
      <ReadDtypeField />
      {analysis.status === 'running' && (
        <ProgressBar progress={analysis.progress} testId="stats-progress" label="Statistics progress" />
      )}
      {analysis.status === 'cancelled' && (
        <p data-testid="stats-cancelled">The statistics pass was cancelled.</p>
      )}
      {analysis.error && <ErrorBox error={analysis.error} testId="stats-error" />}
      {analysis.status === 'idle' && (
        <p className="muted">Statistics appear once the models are loaded and match.</p>
      )}
      {result && (
        <>
          <p className="muted">
            An element counts as changed by an agent when |θ_agent − θ_base| &gt; ε = {result.epsilon}, the
            models read at {readDtypeText(readDtype, facts)}. Counts are exact integers; percentages are
            computed from them.
          </p>
          {result.precision && result.precision.lines.length > 0 && (
            <ul className="notice stats-precision" data-testid="stats-precision">
              {result.precision.lines.map((line) => (
                <li key={line} data-testid="stats-precision-line">
                  {line}
                </li>
              ))}
            </ul>
          )}
          <StatsExports analysis={result} panel={panel} />
          <section data-report="" aria-label="Totals">
            <TotalsTable totals={result.totals} labels={labels} />
          </section>
          <Views.View
            analysis={result}
            labels={labels}
            fallback={
              <ChunkPlaceholder testId="stats-views-loading" height="480px">
                Drawing the atlas, the charts and the tensor table…
              </ChunkPlaceholder>
            }
          />
        </>
      )}
    </section>
  );
}

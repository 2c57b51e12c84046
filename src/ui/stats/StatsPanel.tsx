// Step 2: where the agents changed the base and where they overlap, from the worker's statistics
// pass. The views themselves live in stats/, one component per file.
import { useRef } from 'react';
import { studioStore, useStudio } from '../../state/store.ts';
import { ErrorBox, ProgressBar } from '../studio/common.tsx';
import './analysis.css';
import { AnalysisViews } from './AnalysisViews.tsx';
import { StatsExports } from './StatsExports.tsx';
import { TotalsTable } from './TotalsTable.tsx';

export function StatsPanel() {
  const analysis = useStudio((s) => s.studio.analysis);
  const labels = useStudio((s) => s.studio.analysisLabels);
  const result = analysis.result;
  const panel = useRef<HTMLElement>(null);
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
            An element counts as changed by an agent when |θ_agent − θ_base| &gt; ε = {result.epsilon}. Counts
            are exact integers; percentages are computed from them.
          </p>
          <StatsExports analysis={result} panel={panel} />
          <section data-report="" aria-label="Totals">
            <TotalsTable totals={result.totals} labels={labels} />
          </section>
          <AnalysisViews analysis={result} labels={labels} />
        </>
      )}
    </section>
  );
}

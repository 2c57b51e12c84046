// Step 1: the base and agents (the embedded demo by default; a picked folder, chosen files or a drop
// otherwise), each with its header-only preflight and, for an agent, a sampled check that it derives
// from the base; then the compatibility report and what the merge will need.
import { studioStore, useStudio } from '../../state/store.ts';
import { formatCount } from '../format.ts';
import { focusHeading } from '../studio/StepBar.tsx';
import { branchCounts, percent } from '../stats/summary.ts';
import { CompatReportView } from './CompatReport.tsx';
import { useSetStatus } from './folders.ts';
import { ModelCard } from './ModelCard.tsx';
import { Pickers } from './Pickers.tsx';
import { SetStatus } from './SetStatus.tsx';

/** The statistics' headline where the models are, so the first screen answers "how much did they change". */
function Headline() {
  const analysis = useStudio((s) => s.studio.analysis);
  const labels = useStudio((s) => s.studio.analysisLabels);
  const totals = analysis.result?.totals;
  if (analysis.status === 'running')
    return (
      <p className="studio-headline muted" data-testid="headline-stats" data-status="running">
        Statistics: reading the weights…
      </p>
    );
  if (!totals) return null;
  const branches = branchCounts(totals);
  const changed = totals.numel - branches.unchanged;
  return (
    <p className="studio-headline" data-testid="headline-stats" data-status="done">
      <strong>{formatCount(totals.numel)}</strong> elements over {labels.length} agent
      {labels.length === 1 ? '' : 's'}: <strong>{percent(changed, totals.numel)}%</strong> changed,{' '}
      <strong>{percent(branches.unique, totals.numel)}%</strong> by one agent only,{' '}
      <strong>{percent(branches.shared, totals.numel)}%</strong> by several,{' '}
      <strong>{formatCount(totals.signConflicts)}</strong> sign conflicts.{' '}
      <a
        href="#stats-heading"
        onClick={(event) => {
          event.preventDefault();
          focusHeading('stats-heading');
        }}
      >
        Details
      </a>
    </p>
  );
}

export function LoadPanel() {
  const models = useStudio((s) => s.studio.models);
  const source = useStudio((s) => s.studio.source);
  const base = models.find((m) => m.role === 'base');
  const agents = models.filter((m) => m.role === 'agent');
  return (
    <section className="panel" aria-labelledby="load-heading" data-testid="load-panel" data-source={source}>
      <div className="panel__head">
        <h2 id="load-heading">1. Models</h2>
        <div className="studio-actions">
          <button
            type="button"
            className="button button--secondary"
            data-testid="load-empty"
            disabled={models.length === 0}
            onClick={() => {
              useSetStatus.setState({ question: null });
              void studioStore.getState().startEmpty();
            }}
          >
            Start empty
          </button>
          <button
            type="button"
            className="button button--secondary"
            data-testid="load-demo"
            onClick={() => {
              useSetStatus.setState({ question: null });
              void studioStore.getState().loadDemo();
            }}
          >
            Load the demo set
          </button>
        </div>
      </div>
      <p className="muted studio-lede">
        A base model and the agents fine-tuned from it: only headers are read, weights stay on this machine.
      </p>
      <Headline />
      <SetStatus />
      <div className="studio-models">
        {base ? (
          <ModelCard model={base} index={0} count={1} />
        ) : (
          <article className="card studio-model" data-testid="model-base" data-status="empty">
            <h3>Base</h3>
            <p className="muted">
              A model folder, or a whole set: a folder holding base/ and the agents' folders.
            </p>
            <Pickers role="base" slot={null} testId="model-base" />
          </article>
        )}
        {agents.map((agent, i) => (
          <ModelCard key={agent.slot} model={agent} index={i} count={agents.length} />
        ))}
        <article className="card studio-model" data-testid="model-new-agent">
          <h3>Add an agent</h3>
          <Pickers role="agent" slot={null} testId="model-new-agent" />
        </article>
      </div>
      <CompatReportView />
    </section>
  );
}

// The workflow's steps in one bar, each with its state, each a link that moves focus to its panel.
import { useStudio } from '../../state/store.ts';
import type { EvalTask, StudioData, TaskState } from '../../state/studio-slice.ts';
import { progressShare } from '../eval/progress.ts';

type StepState = 'todo' | 'working' | 'done' | 'error';

interface Step {
  key: string;
  name: string;
  target: string;
  state: StepState;
  text: string;
}

/** Focuses a panel's heading (made focusable for this) and brings it into view. */
export function focusHeading(id: string): void {
  const target = document.getElementById(id);
  if (!target) return;
  // Headings take focus only with a tabindex; controls keep their own place in the Tab order.
  if (target.tabIndex < 0 && !target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
  target.focus();
  target.scrollIntoView({ block: 'start' });
}

function taskStep(task: TaskState<unknown>, idle: string, done: string): Pick<Step, 'state' | 'text'> {
  const progress = task.progress;
  switch (task.status) {
    case 'running':
      return {
        state: 'working',
        text:
          progress && progress.bytesTotal > 0
            ? `${Math.floor((100 * progress.bytesDone) / progress.bytesTotal)}%`
            : 'running',
      };
    case 'done':
      return { state: 'done', text: done };
    case 'error':
      return { state: 'error', text: 'failed' };
    case 'cancelled':
      return { state: 'todo', text: 'cancelled' };
    default:
      return { state: 'todo', text: idle };
  }
}

/** The Evaluate step: its share done while it runs (evaluate()'s progress has no bytes). */
function evalStep(task: EvalTask<unknown>): Pick<Step, 'state' | 'text'> {
  if (task.status !== 'running') return taskStep({ ...task, progress: null }, 'not run', 'scored');
  return {
    state: 'working',
    text: task.progress ? `${Math.floor(100 * progressShare(task.progress))}%` : 'running',
  };
}

function steps(data: StudioData): Step[] {
  const { models } = data;
  const failed = models.filter((m) => m.status === 'error').length;
  const loading = models.filter((m) => m.status === 'loading').length;
  const agents = models.filter((m) => m.role === 'agent').length;
  const hasBase = models.some((m) => m.role === 'base');
  const modelStep: Pick<Step, 'state' | 'text'> =
    failed > 0
      ? { state: 'error', text: `${failed} failed` }
      : loading > 0
        ? { state: 'working', text: `reading ${loading}` }
        : hasBase && agents > 0
          ? data.check.result && !data.check.result.compat.ok
            ? { state: 'error', text: 'do not match' }
            : { state: 'done', text: `base + ${agents} agent${agents === 1 ? '' : 's'}` }
          : { state: 'todo', text: hasBase ? 'add an agent' : 'choose a base' };
  const saved = (data.library.result ?? []).filter((e) => e.status === 'complete').length;
  const session = data.merges.filter(
    (m) => m.location === 'picked' || !(data.library.result ?? []).some((e) => e.folder === m.folder),
  ).length;
  const merges = saved + session;
  return [
    { key: 'models', name: 'Models', target: 'load-heading', ...modelStep },
    {
      key: 'statistics',
      name: 'Statistics',
      target: 'stats-heading',
      ...taskStep(data.analysis, 'waiting for models', 'done'),
    },
    { key: 'merge', name: 'Merge', target: 'merge-heading', ...taskStep(data.merge, 'not run', 'merged') },
    {
      key: 'export',
      name: 'Export',
      target: 'export-heading',
      state: merges > 0 ? 'done' : 'todo',
      text: `${merges} merge${merges === 1 ? '' : 's'}`,
    },
    { key: 'arena', name: 'Arena', target: 'arena-heading', ...taskStep(data.arena, 'not run', 'scored') },
    { key: 'evaluate', name: 'Evaluate', target: 'eval-heading', ...evalStep(data.evaluation.run) },
  ];
}

export function StepBar() {
  const data = useStudio((s) => s.studio);
  return (
    <nav className="stepbar" aria-label="Steps" data-testid="step-bar">
      <ol className="stepbar__list">
        {steps(data).map((step, i) => (
          <li key={step.key}>
            <a
              href={`#${step.target}`}
              className={`stepbar__step stepbar__step--${step.state}`}
              data-testid={`step-${step.key}`}
              data-state={step.state}
              onClick={(event) => {
                event.preventDefault();
                focusHeading(step.target);
              }}
            >
              <span className="stepbar__num" aria-hidden="true">
                {i + 1}
              </span>
              <span className="stepbar__name">{step.name}</span>
              <span className="stepbar__state">{step.text}</span>
            </a>
          </li>
        ))}
      </ol>
    </nav>
  );
}

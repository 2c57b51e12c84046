// One prompt, continued greedily by each chosen model (base, agents, merges), the texts side by side.
import { useId } from 'react';
import { studioStore, useStudio } from '../../state/store.ts';
import { ErrorBox, idPart } from '../studio/common.tsx';
import { progressText } from './progress.ts';

export function GenerateBox() {
  const id = useId();
  const ev = useStudio((s) => s.studio.evaluation);
  const task = ev.generation;
  const running = task.status === 'running';
  return (
    <div className="eval-generate" data-testid="eval-generate" data-status={task.status}>
      <h3>Side by side</h3>
      <div className="studio-field">
        <label htmlFor={`${id}-prompt`}>
          A prompt each chosen model continues ({ev.maxNewTokens} new tokens, greedy
          {ev.chat ? ', chat template' : ''})
        </label>
        <textarea
          id={`${id}-prompt`}
          rows={2}
          data-testid="eval-prompt"
          value={ev.prompt}
          onChange={(event) => studioStore.getState().setEvalOptions({ prompt: event.currentTarget.value })}
        />
      </div>
      <div className="studio-actions">
        <button
          type="button"
          className="button button--secondary"
          data-testid="eval-generate-run"
          disabled={running || ev.prompt.trim() === '' || ev.maxNewTokens < 1}
          onClick={() => void studioStore.getState().runGenerate()}
        >
          Generate
        </button>
        {running && (
          <button
            type="button"
            className="button button--ghost"
            data-testid="eval-generate-cancel"
            onClick={() => studioStore.getState().cancelGenerate()}
          >
            Cancel
          </button>
        )}
        {running && (
          <span className="muted" aria-live="polite">
            {task.progress ? progressText(task.progress) : 'Opening the models…'}
          </span>
        )}
      </div>
      {task.error && <ErrorBox error={task.error} testId="eval-generate-error" />}
      {task.status === 'done' && task.result && (
        <ul className="eval-side" data-testid="eval-generated">
          {task.result.models.map((m, i) => (
            <li key={i} className="card" data-testid={`eval-generated-${idPart(m.label)}`}>
              <h4>{m.label}</h4>
              <pre className="eval-text">{task.result?.texts[i] ?? ''}</pre>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

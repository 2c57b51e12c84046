// A set given to the base: the question where its folders do not say which one is the base (the
// studio never guesses), and a note on which folder it took and why while that one is the base.
import { useId } from 'react';
import { useStudio } from '../../state/store.ts';
import { answerSetQuestion, useSetStatus } from './folders.ts';

const sentence = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

export function SetStatus() {
  const question = useSetStatus((s) => s.question);
  const opened = useSetStatus((s) => s.opened);
  const baseOrigin = useStudio((s) => s.studio.models.find((m) => m.role === 'base')?.origin);
  const headingId = useId();
  if (question)
    return (
      <div
        className="notice notice--warn studio-set"
        role="group"
        aria-labelledby={headingId}
        data-testid="set-question"
        data-set={question.set}
      >
        <p id={headingId}>
          <strong>Which folder of {question.set} is the base?</strong> {sentence(question.why)}, so the studio
          does not guess. The other folders become its agents.
        </p>
        <div className="studio-actions">
          {question.candidates.map((label) => (
            <button
              key={label}
              type="button"
              className="button button--secondary"
              data-testid="set-question-choice"
              data-label={label}
              onClick={() => void answerSetQuestion(label)}
            >
              {label} is the base
            </button>
          ))}
          <button
            type="button"
            className="button button--ghost"
            data-testid="set-question-cancel"
            onClick={() => void answerSetQuestion(null)}
          >
            Cancel
          </button>
        </div>
      </div>
    );
  if (opened && opened.base === baseOrigin)
    return (
      <p className="notice studio-set" role="status" data-testid="set-opened" data-base={opened.base}>
        Opened the set {opened.set}: the base is {opened.base.split('/').pop()} ({opened.why}), with{' '}
        {opened.agents} agent{opened.agents === 1 ? '' : 's'}. Another base? Use Make base on its card.
      </p>
    );
  return null;
}

// Pieces the studio's panels share: the error box, the job progress bar (agent colours: colors.ts).
import type { RefObject } from 'react';
import type { Progress } from '../../driver/job.ts';
import type { WorkerErrorInfo } from '../../worker/protocol.ts';
import { formatBytes, formatCount, formatDuration } from '../format.ts';

export { AGENT_COLORS, agentColor } from './colors.ts';

/** A testid-safe form of a label (agent and layer names may hold dots). */
export function idPart(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, '_');
}

export function ErrorBox({ error, testId }: { error: WorkerErrorInfo; testId: string }) {
  return (
    <div className="notice notice--error" role="alert" data-testid={testId}>
      <p className="studio-error__message">{error.message}</p>
      {(error.file !== undefined || error.tensor !== undefined) && (
        <dl className="studio-error__where">
          {error.file !== undefined && (
            <>
              <dt>File</dt>
              <dd data-testid={`${testId}-file`}>
                <code>{error.file}</code>
              </dd>
            </>
          )}
          {error.tensor !== undefined && (
            <>
              <dt>Tensor</dt>
              <dd data-testid={`${testId}-tensor`}>
                <code>{error.tensor}</code>
              </dd>
            </>
          )}
        </dl>
      )}
    </div>
  );
}

const STAGE_TEXT = { analyze: 'Statistics', merge: 'Merging', verify: 'Verifying' } as const;

export function ProgressBar({
  progress,
  testId,
  label,
}: {
  progress: Progress | null;
  testId: string;
  label: string;
}) {
  const done = progress?.bytesDone ?? 0;
  const total = progress?.bytesTotal ?? 0;
  const share = total > 0 ? done / total : 0;
  return (
    <div className="studio-progress" data-testid={testId}>
      <progress max={1} value={share} aria-label={label} />
      <p className="studio-progress__facts" aria-live="polite">
        {progress === null ? (
          'Starting…'
        ) : (
          <>
            {STAGE_TEXT[progress.stage]}: {formatBytes(done)} of {formatBytes(total)} (
            {(100 * share).toFixed(0)}%), tensor {formatCount(progress.tensorsDone)} of{' '}
            {formatCount(progress.tensorsTotal)}
            {progress.bytesPerSecond > 0 && <>, {formatBytes(progress.bytesPerSecond)}/s</>}
            {progress.etaMs !== undefined && <>, about {formatDuration(progress.etaMs)} left</>}
            {progress.currentTensor !== undefined && (
              <>
                {' '}
                — <code>{progress.currentTensor}</code>
              </>
            )}
          </>
        )}
      </p>
    </div>
  );
}

/** The Cancel button of a running job (merge, evaluation); `buttonRef` lets the panel focus it. */
export function CancelButton({
  buttonRef,
  testId,
  onCancel,
}: {
  buttonRef: RefObject<HTMLButtonElement | null>;
  testId: string;
  onCancel: () => void;
}) {
  return (
    <button
      ref={buttonRef}
      type="button"
      className="button button--secondary"
      data-testid={testId}
      onClick={onCancel}
    >
      Cancel
    </button>
  );
}

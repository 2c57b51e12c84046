// The merge's run region: the Merge buttons, Cancel, the progress bar and the outcome (written,
// cancelled, failed) in one block that stays at the bottom of the merge panel's view while the recipe
// above it scrolls, so none of them is below the fold; Cancel holds the focus while a merge runs.
import { useEffect, useRef } from 'react';
import { studioStore, useStudio } from '../../state/store.ts';
import type { TaskState } from '../../state/studio-slice.ts';
import type { MergeSummary } from '../../worker/protocol.ts';
import { describeWindowCache } from '../../driver/job.ts';
import type { DirectoryPicker } from '../../io/browser-folders.ts';
import { formatBytes, formatDuration } from '../format.ts';
import { ErrorBox, ProgressBar, CancelButton } from '../studio/common.tsx';
import { budgetAdvice } from '../load/budget.ts';

/** What the merge just wrote and where, said where the Merge button is. */
function MergeDone({ summary }: { summary: MergeSummary }) {
  const bytes = summary.files.reduce((sum, f) => sum + f.bytes, 0);
  const cache = summary.stages.windowCache;
  const kept =
    cache &&
    describeWindowCache(
      cache,
      cache.memoryBudget,
      formatBytes,
      (b) => `${budgetAdvice(b)}, set under Engine and memory,`,
    );
  const where =
    summary.location === 'opfs'
      ? `this browser's storage, merges/${summary.folder}`
      : `the folder ${summary.folder}`;
  return (
    <>
      <MergeDoneLine summary={summary} bytes={bytes} where={where} kept={kept} />
      {summary.warnings?.map((warning) => (
        <p key={warning} className="notice notice--warn" data-testid="merge-warning">
          {warning}
        </p>
      ))}
    </>
  );
}

function MergeDoneLine({
  summary,
  bytes,
  where,
  kept,
}: {
  summary: MergeSummary;
  bytes: number;
  where: string;
  kept: string | null | undefined;
}) {
  return (
    <p className="notice notice--ok" role="status" data-testid="merge-done">
      Wrote {summary.files.length} files ({formatBytes(bytes)}) to {where} in{' '}
      {formatDuration(summary.elapsedMs)}. <a href="#export-heading">See it under Export</a>.
      {kept && <span data-testid="merge-kept"> {kept}</span>}
    </p>
  );
}

/** The running merge's progress bar, rendered on each progress report apart from the panel. */
function MergeProgress() {
  const progress = useStudio((s) => s.studio.merge.progress);
  return <ProgressBar progress={progress} testId="merge-progress" label="Merge progress" />;
}

export function MergeRun({
  merge,
  disabled,
  blocked,
  leftOut,
  agentsText,
  pick,
  folderHelpId,
}: {
  merge: TaskState<MergeSummary>;
  disabled: boolean;
  blocked: string | null;
  /** Agents that could not be opened, which the merge leaves out (their cards say so). */
  leftOut: string[];
  agentsText: string;
  pick: DirectoryPicker | null;
  folderHelpId: string;
}) {
  const running = merge.status === 'running';
  const region = useRef<HTMLDivElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const mergeButton = useRef<HTMLButtonElement>(null);
  const folderButton = useRef<HTMLButtonElement>(null);
  // The button that started the run gets the focus back when it ends.
  const starter = useRef<HTMLButtonElement | null>(null);
  const wasRunning = useRef(false);
  useEffect(() => {
    const active = document.activeElement;
    const focusWasOurs = active === null || active === document.body || region.current?.contains(active);
    if (running) {
      // The started button is disabled now, which drops its focus: Cancel takes it, where Enter stops.
      if (focusWasOurs) cancel.current?.focus({ preventScroll: true });
      // Where the panel is not a sticky column (narrow windows), bring the progress into view.
      region.current?.scrollIntoView({ block: 'nearest' });
    } else if (wasRunning.current && focusWasOurs) {
      (starter.current ?? mergeButton.current)?.focus({ preventScroll: true });
    }
    wasRunning.current = running;
  }, [running]);
  return (
    <div className="studio-run" ref={region} data-testid="merge-run-region">
      <div className="studio-actions">
        <button
          ref={mergeButton}
          type="button"
          className="button"
          data-testid="merge-run"
          disabled={disabled}
          onClick={() => {
            starter.current = mergeButton.current;
            void studioStore.getState().runMerge();
          }}
        >
          Merge {agentsText}
        </button>
        {pick && (
          <button
            ref={folderButton}
            type="button"
            className="button button--secondary"
            data-testid="merge-run-folder"
            aria-describedby={folderHelpId}
            disabled={disabled}
            onClick={() => {
              starter.current = folderButton.current;
              void studioStore.getState().mergeIntoFolder(() => pick({ mode: 'readwrite' }));
            }}
          >
            Merge into a folder…
          </button>
        )}
        {running && (
          <CancelButton
            buttonRef={cancel}
            testId="merge-cancel"
            onCancel={() => studioStore.getState().cancelMerge()}
          />
        )}
        {blocked && <span className="muted">{blocked}</span>}
        {!blocked && leftOut.length > 0 && (
          <span className="muted" data-testid="merge-left-out">
            Leaves out {leftOut.join(', ')}, which could not be opened.
          </span>
        )}
      </div>
      {running && <MergeProgress />}
      {merge.status === 'done' && merge.result && <MergeDone summary={merge.result} />}
      {merge.status === 'cancelled' && (
        <p className="notice" data-testid="merge-cancelled" role="status">
          The merge was cancelled; nothing was left in the output folder.
        </p>
      )}
      {merge.error && <ErrorBox error={merge.error} testId="merge-error" />}
    </div>
  );
}

// Step 6: the language models' own evaluation (issue 34): probe files, or prompts the agents complete
// themselves; which models to score, and candidate merges scored beside them unwritten; the run with
// its progress and Cancel; the table of sets × models with each merge's retention of the set's agent
// (and each candidate's "Write this merge"); and one prompt continued by each model side by side.
import { useEffect, useId, useRef, useState } from 'react';
import { chosenCandidates, evalCandidates } from '../../state/studio/eval-slice.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import type { EvalData } from '../../state/studio-slice.ts';
import type { ProbeFileText } from '../../worker/protocol.ts';
import { ErrorBox, idPart, CancelButton } from '../studio/common.tsx';
import { CandidateMerges, WrittenCandidate } from './CandidateMerges.tsx';
import { EvalResults } from './EvalResults.tsx';
import { GenerateBox } from './GenerateBox.tsx';
import { progressShare, progressText } from './progress.ts';
import './eval.css';

const set = (changes: Parameters<ReturnType<typeof studioStore.getState>['setEvalOptions']>[0]): void =>
  studioStore.getState().setEvalOptions(changes);

async function readProbeFiles(files: FileList | null): Promise<void> {
  if (!files || files.length === 0) return;
  const texts: ProbeFileText[] = await Promise.all(
    [...files].map(async (file) => ({ name: file.name, text: await file.text() })),
  );
  studioStore.getState().addProbeFiles(texts);
}

/** Probe lines in a file (its non-blank lines; the worker parses them). */
const lineCount = (text: string): number => text.split('\n').filter((l) => l.trim() !== '').length;

function ProbeFiles({ files }: { files: EvalData['probeFiles'] }) {
  const id = useId();
  const [over, setOver] = useState(false);
  return (
    <div className="studio-field">
      <div
        className={`studio-drop${over ? ' studio-drop--over' : ''}`}
        data-testid="eval-probe-drop"
        onDragOver={(event) => {
          event.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(event) => {
          event.preventDefault();
          setOver(false);
          void readProbeFiles(event.dataTransfer.files);
        }}
      >
        <label className="button button--secondary studio-file" htmlFor={`${id}-probes`}>
          Probe files…
        </label>
        <input
          id={`${id}-probes`}
          className="visually-hidden"
          type="file"
          multiple
          accept=".jsonl,.json,.txt"
          aria-label="Choose probe files (JSONL)"
          data-testid="eval-probe-input"
          onChange={(event) => {
            const input = event.currentTarget;
            void readProbeFiles(input.files).then(() => (input.value = ''));
          }}
        />
        <span className="muted">
          or drop JSONL files here: one per agent, named as the agent, scores its retention
        </span>
      </div>
      {files.length > 0 && (
        <ul className="eval-files" data-testid="eval-probe-files">
          {files.map((f) => (
            <li key={f.name} data-testid={`eval-probe-file-${idPart(f.name)}`}>
              <code>{f.name}</code> <span className="muted">({lineCount(f.text)} lines)</span>{' '}
              <button
                type="button"
                className="button button--ghost"
                aria-label={`Remove ${f.name}`}
                onClick={() => studioStore.getState().removeProbeFile(f.name)}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function ReferencePrompts({ ev }: { ev: EvalData }) {
  const id = useId();
  return (
    <div className="eval-options">
      <div className="studio-field eval-options__wide">
        <label htmlFor={`${id}-prompts`}>Prompts, one a line</label>
        <textarea
          id={`${id}-prompts`}
          rows={4}
          data-testid="eval-prompts"
          value={ev.prompts}
          onChange={(event) => set({ prompts: event.currentTarget.value })}
        />
      </div>
      <div className="studio-field">
        <label htmlFor={`${id}-tokens`}>Tokens each agent writes</label>
        <input
          id={`${id}-tokens`}
          type="number"
          min={1}
          max={512}
          data-testid="eval-reference-tokens"
          value={ev.referenceTokens}
          onChange={(event) =>
            set({ referenceTokens: Math.max(1, Math.floor(event.currentTarget.valueAsNumber) || 1) })
          }
        />
      </div>
    </div>
  );
}

function ModelChoice() {
  const data = useStudio((s) => s.studio);
  const candidates = evalCandidates(data);
  if (candidates.length === 0) return <p className="muted">Load a base and agents first.</p>;
  return (
    <fieldset className="studio-field eval-models" data-testid="eval-models">
      <legend>Models to score</legend>
      <div className="studio-list">
        {candidates.map((c) => (
          <label key={c.key} className="studio-check">
            <input
              type="checkbox"
              data-testid={`eval-model-${idPart(c.key)}`}
              checked={!data.evaluation.excluded.includes(c.key)}
              onChange={(event) => studioStore.getState().setEvalIncluded(c.key, event.currentTarget.checked)}
            />
            {c.label} <span className="muted">({c.kind})</span>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

export function EvalPanel() {
  const id = useId();
  const data = useStudio((s) => s.studio);
  const ev = data.evaluation;
  const run = ev.run;
  const running = run.status === 'running';
  const chosen = chosenCandidates(data).length;
  const candidates = ev.candidateMerges.length;
  const cancel = useRef<HTMLButtonElement>(null);
  const start = useRef<HTMLButtonElement>(null);
  const wasRunning = useRef(false);
  // While it runs, Cancel has the focus; when it ends (Cancel gone with it), the Run button takes it back.
  useEffect(() => {
    if (running) cancel.current?.focus();
    else if (wasRunning.current && document.activeElement === document.body)
      start.current?.focus({ preventScroll: true });
    wasRunning.current = running;
  }, [running]);
  const ready =
    chosen + candidates > 0 && (ev.mode === 'files' ? ev.probeFiles.length > 0 : ev.prompts.trim() !== '');
  return (
    <section
      className="panel"
      aria-labelledby="eval-heading"
      data-testid="eval-panel"
      data-status={run.status}
    >
      <div className="panel__head">
        <h2 id="eval-heading">6. Evaluate on probes</h2>
      </div>
      <p className="muted">
        Each model reads every probe&apos;s prompt and is scored on its completion: the mean negative
        log-likelihood per token (lower is better) and how often its top token is the completion&apos;s.
        Llama, Mistral, Qwen2 and Qwen3 models; the numbers equal <code>merge-studio eval</code>&apos;s.
      </p>
      <fieldset className="studio-field eval-mode" data-testid="eval-mode">
        <legend>Probes</legend>
        <label className="studio-check">
          <input
            type="radio"
            name={`${id}-mode`}
            data-testid="eval-mode-files"
            checked={ev.mode === 'files'}
            onChange={() => set({ mode: 'files' })}
          />
          Probe files (JSONL: prompt, completion, set)
        </label>
        <label className="studio-check">
          <input
            type="radio"
            name={`${id}-mode`}
            data-testid="eval-mode-references"
            checked={ev.mode === 'references'}
            onChange={() => set({ mode: 'references' })}
          />
          The agents write their own reference completions of prompts
        </label>
      </fieldset>
      {ev.mode === 'files' ? <ProbeFiles files={ev.probeFiles} /> : <ReferencePrompts ev={ev} />}
      <div className="eval-options">
        <label className="studio-check">
          <input
            type="checkbox"
            data-testid="eval-chat"
            checked={ev.chat}
            onChange={(event) => set({ chat: event.currentTarget.checked })}
          />
          Chat template (the prompt as one user message)
        </label>
        <div className="studio-field">
          <label htmlFor={`${id}-max-new`}>Max new tokens (greedy)</label>
          <input
            id={`${id}-max-new`}
            type="number"
            min={0}
            max={512}
            data-testid="eval-max-new-tokens"
            value={ev.maxNewTokens}
            onChange={(event) =>
              set({ maxNewTokens: Math.max(0, Math.floor(event.currentTarget.valueAsNumber) || 0) })
            }
          />
        </div>
      </div>
      <ModelChoice />
      <CandidateMerges />
      <div className="studio-actions">
        <button
          ref={start}
          type="button"
          className="button"
          data-testid="eval-run"
          disabled={!ready || running}
          onClick={() => void studioStore.getState().runEval()}
        >
          Evaluate {chosen} model{chosen === 1 ? '' : 's'}
          {candidates > 0 && ` and ${candidates} candidate merge${candidates === 1 ? '' : 's'}`}
        </button>
        {running && (
          <CancelButton
            buttonRef={cancel}
            testId="eval-cancel"
            onCancel={() => studioStore.getState().cancelEval()}
          />
        )}
      </div>
      {running && (
        <div className="studio-progress" data-testid="eval-progress">
          <progress
            max={1}
            value={run.progress ? progressShare(run.progress) : 0}
            aria-label="Evaluation progress"
          />
          <p className="studio-progress__facts" aria-live="polite">
            {run.progress ? progressText(run.progress) : 'Opening the models…'}
          </p>
        </div>
      )}
      {run.status === 'cancelled' && (
        <p data-testid="eval-cancelled" role="status">
          The evaluation was cancelled.
        </p>
      )}
      {run.error && <ErrorBox error={run.error} testId="eval-error" />}
      {run.status === 'done' && run.result && <EvalResults result={run.result} scored={ev.scored} />}
      <WrittenCandidate />
      <GenerateBox />
    </section>
  );
}

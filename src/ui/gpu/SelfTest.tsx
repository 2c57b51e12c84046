// The self-test card: the run at start and a run on demand, both in the engine worker.
import type { ProbeResult } from '../../worker/probe.ts';
import type { GpuStatus } from '../../state/gpu-slice.ts';
import { useStudio } from '../../state/store.ts';
import { Fact } from '../Fact.tsx';
import { formatCount, formatDuration } from '../format.ts';

export function SelfTest({ probe, status }: { probe: ProbeResult | null; status: GpuStatus }) {
  const worker = useStudio((state) => state.gpu.worker);
  const runWorkerProbe = useStudio((state) => state.runWorkerProbe);
  const running = worker.status === 'running';
  return (
    <article className="card" aria-labelledby="selftest-heading">
      <h3 id="selftest-heading">Self-test</h3>
      <p className="card__note">
        The engine&apos;s own convert kernel (seeded f32 rounded to bf16) and a small RAM merge through the
        GPU engine, in the engine worker, each compared bit for bit with the CPU. Time covers upload,
        dispatch, readback and comparison.
      </p>
      <div className="selftest">
        <section className="selftest__run" aria-labelledby="selftest-main-heading">
          <h4 id="selftest-main-heading">At start, in the engine worker</h4>
          {probe !== null ? (
            <ProbeFacts probe={probe} prefix="probe" />
          ) : (
            <p className="muted" data-testid="probe-pending">
              {status === 'probing' ? 'Running…' : 'Did not complete.'}
            </p>
          )}
        </section>
        <section className="selftest__run" aria-labelledby="selftest-worker-heading">
          <div className="selftest__head">
            <h4 id="selftest-worker-heading">Again, in the engine&apos;s Web Worker</h4>
            <button
              type="button"
              className="button"
              data-testid="worker-probe-run"
              onClick={() => void runWorkerProbe()}
              disabled={running || status === 'probing'}
            >
              {running ? 'Running…' : worker.status === 'idle' ? 'Run in a Web Worker' : 'Run again'}
            </button>
          </div>
          <div data-testid="worker-probe" data-status={worker.status} aria-live="polite">
            {worker.status === 'idle' && (
              <p className="muted">Runs the same check again where the merges run, off the main thread.</p>
            )}
            {worker.result !== null && <ProbeFacts probe={worker.result} prefix="worker-probe" />}
            {worker.message !== null && (
              <p className="notice notice--error" data-testid="worker-probe-message">
                {worker.message}
              </p>
            )}
          </div>
        </section>
      </div>
    </article>
  );
}

function ProbeFacts({ probe, prefix }: { probe: ProbeResult; prefix: string }) {
  return (
    <dl className="facts facts--numbers" data-testid={`${prefix}-result`} data-ok={probe.ok}>
      <Fact
        label="Result"
        testId={`${prefix}-ok`}
        value={<span className={probe.ok ? 'pass' : 'fail'}>{probe.ok ? 'Passed' : 'Failed'}</span>}
      />
      <Fact label="Elements checked" testId={`${prefix}-elements`} value={formatCount(probe.elements)} />
      <Fact label="Mismatches" testId={`${prefix}-mismatches`} value={formatCount(probe.mismatches)} />
      <Fact label="Time" testId={`${prefix}-ms`} value={formatDuration(probe.ms)} />
    </dl>
  );
}

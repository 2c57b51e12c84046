// The WebGPU status panel: the adapter, its key limits and features, and the self-test results, or
// what to do when this browser offers no WebGPU.
import type { GpuKeyLimits } from '../../worker/probe.ts';
import type { AdapterSummary, GpuState, GpuStatus } from '../../state/gpu-slice.ts';
import { useStudio } from '../../state/store.ts';
import { Fact } from '../Fact.tsx';
import { formatLimit, LIMIT_DISPLAY } from '../format.ts';
import { SelfTest } from './SelfTest.tsx';

const STATUS_TEXT: Record<GpuStatus, string> = {
  probing: 'Checking WebGPU…',
  ready: 'WebGPU ready',
  unavailable: 'WebGPU unavailable',
  error: 'WebGPU error',
};

export function GpuPanel() {
  const gpu = useStudio((state) => state.gpu);
  return (
    <section
      className="panel"
      aria-labelledby="gpu-heading"
      data-testid="gpu-panel"
      aria-busy={gpu.status === 'probing'}
    >
      <div className="panel__head">
        <h2 id="gpu-heading">WebGPU status</h2>
        <p
          className={`status status--${gpu.status}`}
          role="status"
          data-testid="gpu-status"
          data-status={gpu.status}
        >
          {STATUS_TEXT[gpu.status]}
        </p>
      </div>
      {gpu.message !== null && <GpuMessage status={gpu.status} message={gpu.message} />}
      {gpu.adapter !== null && <AdapterDetails gpu={gpu} adapter={gpu.adapter} />}
    </section>
  );
}

function GpuMessage({ status, message }: { status: GpuStatus; message: string }) {
  return (
    <div className={`notice notice--${status}`} data-testid="gpu-message">
      <p>{message}</p>
      {status === 'unavailable' && (
        <p className="notice__aside">
          Merge Studio needs WebGPU compute shaders to merge checkpoints. The command-line tool{' '}
          <code>merge-studio</code> runs the same engine in Node.
        </p>
      )}
    </div>
  );
}

function AdapterDetails({ gpu, adapter }: { gpu: GpuState; adapter: AdapterSummary }) {
  return (
    <div className="cards">
      <article className="card" aria-labelledby="adapter-heading">
        <h3 id="adapter-heading">Adapter</h3>
        <dl className="facts">
          <Fact label="Vendor" testId="gpu-vendor" value={adapter.vendor} />
          <Fact label="Architecture" testId="gpu-architecture" value={adapter.architecture} />
          <Fact label="Device" testId="gpu-device" value={adapter.device} />
          <Fact label="Description" testId="gpu-description" value={adapter.description} />
          <Fact
            label="Fallback adapter"
            testId="gpu-fallback"
            value={adapter.isFallbackAdapter ? 'Yes (software or limited)' : 'No'}
          />
          <Fact
            label="shader-f16"
            testId="gpu-shader-f16"
            value={gpu.shaderF16 ? 'Available' : 'Not available'}
          />
        </dl>
      </article>
      {gpu.limits !== null && <LimitsCard limits={gpu.limits} />}
      <SelfTest probe={gpu.probe} status={gpu.status} />
      <article className="card card--wide" aria-labelledby="features-heading">
        <h3 id="features-heading">
          Features <span className="muted">({gpu.features.length})</span>
        </h3>
        {gpu.features.length > 0 ? (
          <ul className="chips" data-testid="gpu-features">
            {gpu.features.map((feature) => (
              <li key={feature} className="chip">
                <code>{feature}</code>
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted" data-testid="gpu-features">
            Only core WebGPU.
          </p>
        )}
      </article>
    </div>
  );
}

function LimitsCard({ limits }: { limits: GpuKeyLimits }) {
  const names = Object.keys(LIMIT_DISPLAY) as (keyof GpuKeyLimits)[];
  return (
    <article className="card" aria-labelledby="limits-heading">
      <h3 id="limits-heading">Adapter limits</h3>
      <dl className="facts facts--numbers">
        {names.map((name) => (
          <div key={name} className="facts__row">
            <dt title={name}>{LIMIT_DISPLAY[name].label}</dt>
            <dd
              data-testid={`gpu-limit-${name}`}
              data-value={limits[name]}
              title={`${limits[name]} (${name})`}
            >
              {formatLimit(name, limits[name])}
            </dd>
          </div>
        ))}
      </dl>
      <p className="card__note">A device gets the WebGPU defaults unless it asks for more.</p>
    </article>
  );
}

// The studio's page: skip links, a header with the engine as a status chip (its details on demand),
// the step bar, the studio's workflow, and a footer on where the work happens.
import { useState } from 'react';
import { useStudio } from '../state/store.ts';
import { GpuPanel } from './gpu/GpuPanel.tsx';
import { focusHeading, StepBar } from './studio/StepBar.tsx';
import { Studio } from './studio/Studio.tsx';

const CHIP_TEXT = {
  probing: 'Checking WebGPU…',
  ready: 'WebGPU',
  unavailable: 'No WebGPU',
  error: 'WebGPU error',
} as const;

const SKIPS = [
  { id: 'load-heading', text: 'Skip to models' },
  { id: 'merge-method', text: 'Skip to the merge recipe' },
  { id: 'export-heading', text: 'Skip to merged models' },
] as const;

function SkipLinks() {
  return (
    <nav className="skip-links" aria-label="Skip links">
      {SKIPS.map((skip) => (
        <a
          key={skip.id}
          href={`#${skip.id}`}
          className="skip-link"
          data-testid={`skip-${skip.id}`}
          onClick={(event) => {
            event.preventDefault();
            focusHeading(skip.id);
          }}
        >
          {skip.text}
        </a>
      ))}
    </nav>
  );
}

/** The engine in one line; a click shows the adapter, its limits and the self-tests. */
function EngineChip({ open, onToggle }: { open: boolean; onToggle: () => void }) {
  const gpu = useStudio((s) => s.gpu);
  const adapter = gpu.adapter ? ` · ${gpu.adapter.architecture || gpu.adapter.vendor || 'adapter'}` : '';
  return (
    <button
      type="button"
      className={`engine-chip engine-chip--${gpu.status}`}
      data-testid="engine-chip"
      data-status={gpu.status}
      aria-expanded={open}
      aria-controls="engine-details"
      onClick={onToggle}
    >
      <span className="engine-chip__dot" aria-hidden="true" />
      {CHIP_TEXT[gpu.status]}
      {gpu.status === 'ready' ? adapter : ''}
      <span className="visually-hidden">: engine details</span>
    </button>
  );
}

export function App() {
  const status = useStudio((s) => s.gpu.status);
  const [toggled, setToggled] = useState<boolean | null>(null);
  // A browser without a working WebGPU shows why at once; otherwise the details wait for a click.
  const open = toggled ?? (status === 'unavailable' || status === 'error');
  return (
    <div className="app">
      <SkipLinks />
      <header className="app-header" data-testid="app-header">
        <div className="app-header__inner">
          <div>
            <h1 className="app-title">Merge Studio</h1>
            <p className="app-purpose" data-testid="app-purpose">
              Merge fine-tuned agent checkpoints that share one base model (RAM, RAM+, TIES, DARE, task
              arithmetic) with WebGPU compute shaders, in this browser.
            </p>
          </div>
          <EngineChip open={open} onToggle={() => setToggled(!open)} />
        </div>
      </header>
      <div id="engine-details" className="app-engine" hidden={!open} data-testid="engine-details">
        <GpuPanel />
      </div>
      <StepBar />
      <main className="app-main">
        <Studio />
      </main>
      <footer className="app-footer">
        All computation runs on this machine: the page may only connect to the origin it was loaded from.
      </footer>
    </div>
  );
}

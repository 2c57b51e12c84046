// The studio's page: header, the WebGPU status panel, the studio's workflow, and a footer on where the work happens.
import { GpuPanel } from './GpuPanel.tsx';
import { Studio } from './studio/Studio.tsx';

export function App() {
  return (
    <div className="app">
      <header className="app-header" data-testid="app-header">
        <div className="app-header__inner">
          <h1 className="app-title">Merge Studio</h1>
          <p className="app-purpose" data-testid="app-purpose">
            Merge fine-tuned agent checkpoints that share one base model (RAM, RAM+, TIES, DARE, task
            arithmetic) with WebGPU compute shaders, in this browser.
          </p>
        </div>
      </header>
      <main className="app-main">
        <GpuPanel />
        <Studio />
      </main>
      <footer className="app-footer">
        All computation runs on this machine: the page may only connect to the origin it was loaded from.
      </footer>
    </div>
  );
}

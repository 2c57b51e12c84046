// What the merge will need, on demand: the engine (GPU or CPU reference and why), what a pass reads
// and writes, the window buffers, and the memory budget that decides what stays on the GPU.
import { MEMORY_BUDGETS, type EngineInfo, type MemoryEstimate } from '../../worker/protocol.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { formatBytes, formatCount } from '../format.ts';
import { budgetAdvice } from './budget.ts';

/** What the budget leaves to keep windows between a counting pass and the merge, and what that reads. */
function KeptWindows({ memory }: { memory: MemoryEstimate }) {
  const methods = 'TIES, Breadcrumbs and tensor-local RAM+';
  const windows = (n: number): string => `${formatCount(n)} window${n === 1 ? '' : 's'}`;
  if (memory.largestWindows <= 2)
    return <>None needed: the two window sets hold every tensor here whole, so every method reads it once.</>;
  const room =
    memory.keptWindows === 0
      ? 'No room beyond the window buffers'
      : `Room for ${windows(memory.keptWindows)} (${formatBytes(memory.keptBytes)})`;
  const largest = windows(memory.largestWindows);
  if (memory.rereadTensors === 0)
    return (
      <>
        {room}: {methods} read every tensor here once (the largest takes {largest}).
      </>
    );
  const which =
    memory.rereadTensors === memory.mergedTensors
      ? 'read every tensor here in part twice'
      : `read every tensor here once but ${memory.rereadTensors === 1 ? 'the largest' : `the ${formatCount(memory.rereadTensors)} largest`}`;
  return (
    <>
      {room}: {methods} {which} (the largest takes {largest}), whose windows past the first{' '}
      {formatCount(2 + memory.keptWindows)} they read twice; {budgetAdvice(memory.readOnceBudget)} would read
      every tensor once.
    </>
  );
}

/** The memory budget of the next jobs: larger ones keep more windows on the GPU between passes. */
function BudgetSelect() {
  const budget = useStudio((s) => s.studio.memoryBudget);
  return (
    <select
      id="memory-budget-select"
      data-testid="memory-budget-select"
      value={budget}
      onChange={(e) => void studioStore.getState().setMemoryBudget(Number(e.target.value))}
    >
      {MEMORY_BUDGETS.map((b) => (
        <option key={b} value={b}>
          {formatBytes(b)}
        </option>
      ))}
    </select>
  );
}

/** Details on demand: one line says what the merge will need. */
export function EngineCard({ engine, memory }: { engine: EngineInfo; memory: MemoryEstimate }) {
  return (
    <details className="card card--wide studio-engine" data-testid="engine-card">
      <summary>
        <h3>Engine and memory</h3>{' '}
        <span className="muted">
          {engine.kind === 'gpu' ? 'WebGPU' : 'CPU reference'}; reads {formatBytes(memory.inputBytes)} per
          pass, writes {formatBytes(memory.outputBytes)}
        </span>
      </summary>
      <dl className="facts">
        <div className="facts__row">
          <dt>Engine</dt>
          <dd data-testid="engine-kind" data-kind={engine.kind}>
            {engine.kind === 'gpu' ? 'WebGPU' : 'CPU reference'}: {engine.description}
          </dd>
        </div>
        {engine.fallbackReason && (
          <div className="facts__row">
            <dt>Why not the GPU</dt>
            <dd>{engine.fallbackReason}</dd>
          </div>
        )}
        {engine.limits && (
          <div className="facts__row">
            <dt>Largest buffer / binding</dt>
            <dd>
              {formatBytes(engine.limits.maxBufferSize)} /{' '}
              {formatBytes(engine.limits.maxStorageBufferBindingSize)}
            </dd>
          </div>
        )}
        <div className="facts__row">
          <dt>Tensors merged</dt>
          <dd>{formatCount(memory.mergedTensors)}</dd>
        </div>
        <div className="facts__row">
          <dt>Read per pass</dt>
          <dd data-testid="memory-input">{formatBytes(memory.inputBytes)}</dd>
        </div>
        <div className="facts__row">
          <dt>Output (OPFS)</dt>
          <dd data-testid="memory-output">{formatBytes(memory.outputBytes)}</dd>
        </div>
        <div className="facts__row">
          <dt>Window buffers</dt>
          <dd data-testid="memory-gpu">
            {formatBytes(memory.gpuBytes)} ({formatCount(memory.windowElements)} elements per window), kept
            for a minute after each job so that the next one starts without making them again
          </dd>
        </div>
        <div className="facts__row">
          <dt>Read ahead, written behind</dt>
          <dd data-testid="memory-driver">
            up to {formatBytes(memory.driverBytes)}: the next tensor's first window of every model, read while
            this one merges, and output queued for storage and for its checksums
          </dd>
        </div>
        <div className="facts__row">
          <dt>Kept between passes</dt>
          <dd data-testid="memory-kept" data-kept={memory.keptWindows}>
            <KeptWindows memory={memory} />
          </dd>
        </div>
        <div className="facts__row">
          <dt>
            <label htmlFor="memory-budget-select">Memory budget</label>
          </dt>
          <dd data-testid="memory-budget">
            {formatBytes(memory.budgetBytes)} for GPU buffers, their copies in the worker, the read-ahead, the
            write-behind and the checksums' copies together, at any model size. A larger one keeps more
            windows on the GPU between passes: <BudgetSelect />
          </dd>
        </div>
      </dl>
    </details>
  );
}

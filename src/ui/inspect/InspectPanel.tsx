// The statistics down to one tensor and one element: the tensor view (where in a tensor each agent
// changed what, drawn by the engine on the GPU) and the element inspector (what the merge writes there).
import { useMemo } from 'react';
import { useStudio, studioStore } from '../../state/store.ts';
import { Inspector } from './Inspector.tsx';
import { TensorView } from './TensorView.tsx';
import './inspect.css';

export function InspectPanel() {
  const tensor = useStudio((s) => s.inspect.tensor);
  const index = useStudio((s) => s.inspect.index);
  const tensors = useStudio((s) => s.studio.analysis.result?.tensors);
  const names = useMemo(() => tensors?.map((t) => t.name) ?? [], [tensors]);
  const numel = tensors?.find((t) => t.name === tensor)?.numel;
  const method = useStudio((s) => s.studio.params.method);
  const known = names.includes(tensor);
  return (
    <section className="panel" aria-labelledby="inspect-heading" data-testid="inspect-panel">
      <div className="panel__head">
        <h2 id="inspect-heading">Tensor view and element inspector</h2>
      </div>
      <p className="muted">
        Where in one tensor each agent changed elements (unique, shared, sign conflict), and for one element
        the stored values, τ, which agents count as changed and what the current method ({method}) writes
        there.
      </p>
      <form
        className="inspect-form"
        // The engine checks the index and names the tensor when it is out of range.
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void studioStore.getState().runExplain();
        }}
      >
        <label>
          Tensor
          <input
            data-testid="inspector-tensor"
            list="inspect-tensor-names"
            value={tensor}
            spellCheck={false}
            onChange={(e) => studioStore.getState().setInspectTarget({ tensor: e.target.value.trim() })}
          />
        </label>
        <datalist id="inspect-tensor-names">
          {names.map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
        <label>
          Element (flat index{numel !== undefined ? `, 0 to ${numel - 1}` : ''})
          <input
            data-testid="inspector-index"
            type="number"
            inputMode="numeric"
            value={Number.isFinite(index) ? index : ''}
            onChange={(e) => studioStore.getState().setInspectTarget({ index: Number(e.target.value) })}
          />
        </label>
        <button
          type="button"
          className="button button--secondary"
          data-testid="tensor-view-open"
          disabled={!known}
          onClick={() => void studioStore.getState().inspectTensor(tensor)}
        >
          Show tensor
        </button>
        <button type="submit" className="button" data-testid="inspector-run" disabled={!tensor}>
          Explain element
        </button>
      </form>
      <TensorView />
      <Inspector />
    </section>
  );
}

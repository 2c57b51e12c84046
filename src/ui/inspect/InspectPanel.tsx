// The statistics down to one tensor and one element: the tensor view (where in a tensor each agent
// changed what, drawn by the engine on the GPU) and the element inspector (what the merge writes there).
import { useId, useMemo, useState } from 'react';
import { tensorRecords } from '../../driver/model-transfer.ts';
import { elementPosition, parseElement, tensorMatrix } from '../../methods/mask-geometry.ts';
import { useStudio, studioStore } from '../../state/store.ts';
import { formatCount } from '../format.ts';
import { Inspector } from './Inspector.tsx';
import { TensorView } from './TensorView.tsx';
import './inspect.css';

/**
 * The element field: a flat index, or a position such as [row, col] (or row, col) of the tensor seen
 * as a matrix, or in its own dimensions. The text stays as typed; the element it names is said below
 * both ways, and a text that names none is said why.
 */
function ElementField({ shape, index }: { shape: readonly number[] | null; index: number }) {
  const id = useId();
  // The text typed, with the index it was read as: a click in the tensor view sets another index,
  // and the field then shows that one.
  const [typed, setTyped] = useState<{ text: string; index: number } | null>(null);
  const text =
    typed && Object.is(typed.index, index) ? typed.text : Number.isFinite(index) ? String(index) : '';
  const parsed = read(text, shape);
  const numel = shape?.reduce((a, b) => a * b, 1);
  let said: string;
  if ('error' in parsed) said = parsed.error;
  else if (!shape) said = `element ${formatCount(parsed.index)}`;
  else {
    const { rows, cols } = tensorMatrix(shape);
    const [row, col] = elementPosition(parsed.index, shape);
    said = `element ${formatCount(parsed.index)} = [${row}, ${col}] of ${formatCount(rows)} × ${formatCount(cols)}`;
  }
  return (
    <div className="inspect-element">
      <label htmlFor={id}>Element: index or [row, col]</label>
      <input
        id={id}
        data-testid="inspector-index"
        type="text"
        spellCheck={false}
        autoComplete="off"
        placeholder={numel !== undefined ? `0 to ${numel - 1}, or [row, col]` : 'e.g. 12 or [0, 12]'}
        value={text}
        aria-invalid={'error' in parsed}
        aria-describedby={`${id}-said`}
        onChange={(e) => {
          const next = e.target.value;
          const got = read(next, shape);
          // A flat index past the end still goes to the engine, whose error names the tensor and its size.
          const at = 'index' in got ? got.index : FLAT.test(next) ? Number(next) : NaN;
          setTyped({ text: next, index: at });
          studioStore.getState().setInspectTarget({ index: at });
        }}
      />
      <span
        id={`${id}-said`}
        className={`inspect-element__said${'error' in parsed ? ' inspect-element__said--bad' : ''}`}
        data-testid="inspector-element"
        data-index={'index' in parsed ? parsed.index : undefined}
      >
        {said}
      </span>
    </div>
  );
}

const FLAT = /^\s*\d+\s*$/;

/** The element a text names in a tensor of this shape; without a shape, only a flat index. */
function read(text: string, shape: readonly number[] | null): { index: number } | { error: string } {
  if (shape) return parseElement(text, shape);
  return FLAT.test(text)
    ? { index: Number(text) }
    : { error: 'Choose a tensor to give a position as [row, col]; a flat index works for any.' };
}

export function InspectPanel() {
  const tensor = useStudio((s) => s.inspect.tensor);
  const index = useStudio((s) => s.inspect.index);
  const tensors = useStudio((s) => s.studio.analysis.result?.tensors);
  const names = useMemo(() => tensors?.map((t) => t.name) ?? [], [tensors]);
  const base = useStudio((s) => s.studio.models.find((m) => m.role === 'base')?.report);
  const shape = useMemo(
    () => (base ? (tensorRecords(base).find((t) => t.name === tensor)?.shape ?? null) : null),
    [base, tensor],
  );
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
        <ElementField shape={shape} index={index} />
        <button
          type="button"
          className="button button--secondary"
          data-testid="tensor-view-open"
          disabled={!known}
          onClick={() => void studioStore.getState().inspectTensor(tensor)}
        >
          Show tensor
        </button>
        <button
          type="submit"
          className="button"
          data-testid="inspector-run"
          disabled={!tensor || !Number.isFinite(index)}
        >
          Explain element
        </button>
      </form>
      <TensorView />
      <Inspector />
    </section>
  );
}

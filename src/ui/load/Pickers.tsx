// The ways to hand the studio a model: a picked folder (where the browser has showDirectoryPicker),
// a folder or files from an <input>, or a drop; each pick is loaded where it was chosen.
import { useId, useState } from 'react';
import type { ModelRole } from '../../state/studio-slice.ts';
import {
  directoryPicker,
  fromDataTransfer,
  fromFileList,
  pickFolder,
  type PickedModel,
} from '../../io/browser-folders.ts';
import { loadPicks } from './folders.ts';

export function Pickers({ role, slot, testId }: { role: ModelRole; slot: string | null; testId: string }) {
  const id = useId();
  const [over, setOver] = useState(false);
  const pick = directoryPicker();
  const load = (picks: PickedModel[]): void => loadPicks(role, slot, picks);
  const what = role === 'base' ? 'the base model' : slot === null ? 'a new agent' : 'this agent';
  return (
    <div
      className={`studio-drop${over ? ' studio-drop--over' : ''}`}
      data-testid={`${testId}-drop`}
      onDragOver={(event) => {
        event.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(event) => {
        event.preventDefault();
        setOver(false);
        void fromDataTransfer(event.dataTransfer).then(load);
      }}
    >
      {pick && (
        <button
          type="button"
          className="button button--secondary"
          data-testid={`${testId}-pick-folder`}
          onClick={() => void pickFolder(pick).then(load, () => undefined)}
        >
          Choose folder…
        </button>
      )}
      <label className="button button--secondary studio-file" htmlFor={`${id}-folder`}>
        Folder (upload)
      </label>
      <input
        id={`${id}-folder`}
        className="visually-hidden"
        type="file"
        multiple
        {...{ webkitdirectory: '' }}
        aria-label={`Choose a model folder for ${what}`}
        data-testid={`${testId}-folder-input`}
        onChange={(event) => load(fromFileList(event.currentTarget.files ?? new DataTransfer().files))}
      />
      <label className="button button--secondary studio-file" htmlFor={`${id}-files`}>
        Files
      </label>
      <input
        id={`${id}-files`}
        className="visually-hidden"
        type="file"
        multiple
        accept=".safetensors,.json,.txt,.model,.jinja,.tiktoken"
        aria-label={`Choose the model files for ${what}`}
        data-testid={`${testId}-files-input`}
        onChange={(event) => load(fromFileList(event.currentTarget.files ?? new DataTransfer().files))}
      />
      <span className="muted">
        or drop{' '}
        {slot === null && role === 'agent'
          ? 'one or more folders'
          : role === 'base'
            ? 'a folder (or a set folder)'
            : 'a folder'}{' '}
        or files here
      </span>
    </div>
  );
}

// "Download as zip": a merge folder of OPFS as one stored zip (src/format/zip-export.ts). Where the
// browser has showSaveFilePicker, the zip streams into the file picked, slice by slice; elsewhere it
// is a Blob of headers and the OPFS Files themselves, handed to a download link.
import { useRef, useState } from 'react';
import { writeZip, zipBlob, type ZipInput, type ZipProgress } from '../../format/zip-export.ts';
import { folderPart } from '../../state/studio/names.ts';
import { mergedFiles } from '../../worker/client.ts';
import { formatBytes } from '../format.ts';

interface SaveFileHandle {
  name: string;
  createWritable(): Promise<{
    write(data: BufferSource): Promise<void>;
    close(): Promise<void>;
    abort(): Promise<void>;
  }>;
}

type SavePicker = (options: {
  suggestedName: string;
  types: { description: string; accept: Record<string, string[]> }[];
}) => Promise<SaveFileHandle>;

function savePicker(): SavePicker | undefined {
  return (globalThis as { showSaveFilePicker?: SavePicker }).showSaveFilePicker;
}

/** Zips merges/<folder> under one top folder named after the merge; returns what happened. */
async function exportZip(
  folder: string,
  name: string,
  onProgress: (p: ZipProgress) => void,
  signal: AbortSignal,
): Promise<string | null> {
  const top = folderPart(name);
  const inputs = async (): Promise<ZipInput[]> =>
    (await mergedFiles(folder)).map((file) => ({ path: `${top}/${file.name}`, file }));
  const pick = savePicker();
  if (pick) {
    let handle: SaveFileHandle;
    try {
      // First, while the click's user activation lasts.
      handle = await pick({
        suggestedName: `${top}.zip`,
        types: [{ description: 'Zip archive', accept: { 'application/zip': ['.zip'] } }],
      });
    } catch (error) {
      if (error instanceof Error && error.name === 'AbortError') return null;
      throw error;
    }
    const files = await inputs();
    const writable = await handle.createWritable();
    try {
      const length = await writeZip(files, (bytes) => writable.write(bytes as Uint8Array<ArrayBuffer>), {
        signal,
        onProgress,
      });
      await writable.close();
      return `Saved ${handle.name}: ${files.length} files, ${formatBytes(length)}.`;
    } catch (error) {
      await writable.abort().catch(() => undefined);
      throw error;
    }
  }
  const blob = await zipBlob(await inputs(), { signal, onProgress });
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = `${top}.zip`;
  link.click();
  // The browser has taken the URL once the click's navigation started.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return `Downloading ${top}.zip: ${formatBytes(blob.size)}.`;
}

export function ZipDownload({ folder, name, testId }: { folder: string; name: string; testId: string }) {
  const [state, setState] = useState<{ running: boolean; text: string | null; failed: boolean }>({
    running: false,
    text: null,
    failed: false,
  });
  const cancel = useRef<AbortController | null>(null);
  const start = (): void => {
    const controller = new AbortController();
    cancel.current = controller;
    setState({ running: true, text: 'Zipping…', failed: false });
    const onProgress = (p: ZipProgress): void =>
      setState({
        running: true,
        text: `Zipping ${formatBytes(p.bytesDone)} of ${formatBytes(p.bytesTotal)}…`,
        failed: false,
      });
    exportZip(folder, name, onProgress, controller.signal).then(
      (text) => setState({ running: false, text, failed: false }),
      (error: unknown) =>
        setState(
          error instanceof Error && error.name === 'AbortError'
            ? { running: false, text: 'The zip was cancelled; nothing was kept.', failed: false }
            : {
                running: false,
                text: `The zip failed: ${error instanceof Error ? error.message : String(error)}`,
                failed: true,
              },
        ),
    );
  };
  return (
    <>
      {state.running ? (
        <button
          type="button"
          className="button button--secondary"
          data-testid={`${testId}-zip-cancel`}
          onClick={() => cancel.current?.abort()}
        >
          Cancel zip
        </button>
      ) : (
        <button
          type="button"
          className="button"
          data-testid="merge-download-zip"
          aria-label={`Download as zip: ${name}`}
          onClick={start}
        >
          Download as zip
        </button>
      )}
      {state.text && (
        <span
          role={state.failed ? 'alert' : 'status'}
          className={`studio-help studio-actions__status${state.failed ? ' notice--error' : ''}`}
          data-testid={`${testId}-zip-status`}
          data-status={state.running ? 'running' : state.failed ? 'error' : 'done'}
        >
          {state.text}
        </span>
      )}
    </>
  );
}

// A merge folder leaves the browser as one stored zip (format/zip.ts), two ways:
// - streamed: each file read in 8 MiB slices, its CRC-32 computed in passing, and every slice written
//   at once to a sink (a showSaveFilePicker file's writable), so at most one slice is held;
// - as a Blob, where there is no save picker (Firefox, Safari) and no service worker to stream a
//   download through: the CRCs are computed first (one read pass), then the zip is a Blob of the
//   small headers and the Files themselves. An OPFS File is a handle to bytes on disk, and a Blob of
//   Files references them rather than copying, so the download is not bound by the ~2 GiB a browser
//   holds in memory for one Blob (see /work/shared/notes/reliability.md §3.2–3.4).
// Both give the same bytes for the same files.
import { throwIfAborted } from '../io/abort.ts';
import { crc32, ZipWriter } from './zip.ts';

/** A file to zip: its path inside the zip and the browser File holding it (OPFS: disk-backed). */
export interface ZipInput {
  path: string;
  file: File;
}

export interface ZipProgress {
  /** Data bytes read so far (both passes count for the Blob way), and in all. */
  bytesDone: number;
  bytesTotal: number;
  file: string;
}

export interface ZipOptions {
  signal?: AbortSignal;
  onProgress?: (progress: ZipProgress) => void;
}

const SLICE = 8 << 20;

/** Reads `file` in slices, handing each to `each`; fails if the file is not `size` bytes long any more. */
async function readSlices(
  input: ZipInput,
  each: (bytes: Uint8Array) => Promise<void> | void,
  options: ZipOptions,
  progress: { done: number; total: number },
): Promise<void> {
  const { file } = input;
  let read = 0;
  for (let at = 0; at < file.size; at += SLICE) {
    throwIfAborted(options.signal, 'The zip was cancelled.');
    const bytes = new Uint8Array(await file.slice(at, Math.min(at + SLICE, file.size)).arrayBuffer());
    read += bytes.length;
    await each(bytes);
    progress.done += bytes.length;
    options.onProgress?.({ bytesDone: progress.done, bytesTotal: progress.total, file: input.path });
  }
  if (read !== file.size)
    throw new Error(`${input.path} changed while it was zipped (read ${read} of ${file.size} bytes).`);
}

/** Streams the zip of `inputs` to `write`, one slice at a time; returns the zip's length. */
export async function writeZip(
  inputs: readonly ZipInput[],
  write: (bytes: Uint8Array) => Promise<void>,
  options: ZipOptions = {},
): Promise<number> {
  const zip = new ZipWriter();
  const progress = { done: 0, total: inputs.reduce((sum, f) => sum + f.file.size, 0) };
  for (const input of inputs) {
    await write(zip.begin({ name: input.path, size: input.file.size, modified: input.file.lastModified }));
    let crc = 0;
    await readSlices(
      input,
      async (bytes) => {
        crc = crc32(bytes, crc);
        await write(bytes);
      },
      options,
      progress,
    );
    await write(zip.end(crc));
  }
  await write(zip.finish());
  return zip.offset;
}

/** The zip of `inputs` as a Blob of its headers and the Files themselves; the CRCs take one read pass. */
export async function zipBlob(inputs: readonly ZipInput[], options: ZipOptions = {}): Promise<Blob> {
  const zip = new ZipWriter();
  const progress = { done: 0, total: inputs.reduce((sum, f) => sum + f.file.size, 0) };
  const parts: BlobPart[] = [];
  for (const input of inputs) {
    const header = zip.begin({ name: input.path, size: input.file.size, modified: input.file.lastModified });
    let crc = 0;
    await readSlices(input, (bytes) => void (crc = crc32(bytes, crc)), options, progress);
    parts.push(header as Uint8Array<ArrayBuffer>, input.file, zip.end(crc) as Uint8Array<ArrayBuffer>);
  }
  parts.push(zip.finish() as Uint8Array<ArrayBuffer>);
  const blob = new Blob(parts, { type: 'application/zip' });
  if (blob.size !== zip.offset)
    throw new Error(`The zip is ${blob.size} bytes, ${zip.offset} were laid out.`);
  return blob;
}

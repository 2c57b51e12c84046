// Timing wrappers for byte sources and folder sinks: the engine worker and the benchmark measure the
// read and write stages of a merge with the same ones.
import type { FolderSink } from './sink.ts';
import type { ByteSource } from './source.ts';

/** Wall time summed over the calls it timed, and the bytes they moved. */
export class StageClock {
  ms = 0;
  bytes = 0;

  async time<T>(run: () => Promise<T>, bytes = 0): Promise<T> {
    const started = performance.now();
    try {
      return await run();
    } finally {
      this.ms += performance.now() - started;
      this.bytes += bytes;
    }
  }
}

/** A source whose reads are timed into `clock`; `before` runs untimed ahead of each read. */
export function timedSource(source: ByteSource, clock: StageClock, before?: () => Promise<void>): ByteSource {
  return {
    name: source.name,
    size: source.size,
    async read(offset, length, into) {
      await before?.();
      return clock.time(() => source.read(offset, length, into), length);
    },
  };
}

/** A folder whose file creations, writes and closes are timed into `clock`. */
export function timedFolder(folder: FolderSink, clock: StageClock): FolderSink {
  return {
    name: folder.name,
    list: () => folder.list(),
    open: (file) => folder.open(file),
    remove: (file) => folder.remove(file),
    create: async (file) => {
      const sink = await clock.time(() => folder.create(file));
      return {
        write: (chunk) => clock.time(() => sink.write(chunk), chunk.byteLength),
        close: () => clock.time(() => sink.close()),
        abort: () => sink.abort(),
      };
    },
  };
}

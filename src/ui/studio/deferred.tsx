// Parts of the page kept out of its main chunk (the charts and recharts with them, the comparison):
// each is a same-origin chunk fetched when first drawn or when its panel asks for it ahead of time,
// with a placeholder holding its room meanwhile so nothing below it jumps.
import { lazy, Suspense, useState, type ComponentType, type ReactNode } from 'react';

export interface Deferred<P extends object> {
  /** Draws the part, or `fallback` until its chunk has arrived. */
  View: ComponentType<P & { fallback: ReactNode }>;
  /** Starts fetching the chunk (once); a panel calls it before it needs the part. */
  preload: () => Promise<unknown>;
}

/** A component from a chunk of its own: `load` is a dynamic import that picks the component out. */
export function deferred<P extends object>(load: () => Promise<ComponentType<P>>): Deferred<P> {
  let loaded: ComponentType<P> | null = null;
  let pending: Promise<ComponentType<P>> | null = null;
  const fetchChunk = (): Promise<ComponentType<P>> =>
    (pending ??= load().then((component) => (loaded = component)));
  const Lazy = lazy(async () => ({ default: await fetchChunk() }));
  function View({ fallback, ...props }: P & { fallback: ReactNode }) {
    // Chosen once per mount: swapping the lazy wrapper for the loaded component would remount it and
    // lose its state. A chunk already here is drawn at once, with no placeholder frame.
    const [Part] = useState<ComponentType<P>>(() => loaded ?? Lazy);
    return (
      <Suspense fallback={fallback}>
        <Part {...(props as P)} />
      </Suspense>
    );
  }
  // A failed fetch is reported where the part is drawn (Suspense rethrows it), not as a stray rejection.
  const preload = (): Promise<unknown> => fetchChunk().catch(() => undefined);
  return { View, preload };
}

/** What a deferred part shows while its chunk arrives: its room, kept, and a word on what comes. */
export function ChunkPlaceholder({
  testId,
  height,
  children,
}: {
  testId: string;
  /** The room the part takes once drawn (CSS length), so the page below does not move. */
  height: string;
  children?: ReactNode;
}) {
  return (
    <div
      className="chunk-placeholder muted"
      data-testid={testId}
      style={{ minHeight: height }}
      aria-busy="true"
    >
      {children}
    </div>
  );
}

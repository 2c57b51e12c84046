// The engine worker's network lockdown: a CSP meta tag does not apply to workers, and a static host
// may send no header, so the worker removes every network primitive from its own global scope once
// it starts and keeps one fetch that reaches only its own origin (for the demo files it loads).

/** Globals through which a worker could reach the network. */
export const NETWORK_GLOBALS = [
  'fetch',
  'XMLHttpRequest',
  'WebSocket',
  'WebSocketStream',
  'EventSource',
  'WebTransport',
  'importScripts',
] as const;

export type OwnOriginFetch = (url: string) => Promise<Response>;

interface Scope {
  fetch: typeof fetch;
  location: { href: string; origin: string };
}

/**
 * Replaces each network global of `scope` with a non-writable, non-configurable undefined and returns
 * a fetch that refuses any URL outside the scope's origin. Call once, first thing in the worker.
 */
export function lockDownNetwork(scope: Scope): OwnOriginFetch {
  const ownFetch = scope.fetch.bind(scope);
  const { href, origin } = scope.location;
  for (const name of NETWORK_GLOBALS) {
    // Defined on the scope itself, so it shadows what the prototype chain (WorkerGlobalScope) offers.
    Object.defineProperty(scope, name, { value: undefined, writable: false, configurable: false });
  }
  return (url) => {
    const target = new URL(url, href);
    if (target.origin !== origin)
      return Promise.reject(
        new TypeError(`the engine worker fetches only from ${origin}, not ${target.origin}`),
      );
    return ownFetch(target.href);
  };
}

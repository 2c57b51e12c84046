// Runs the GPU self-test in a fresh dedicated Web Worker and settles with its result.
import type { ProbeResult } from './probe.ts';
import type { ProbeWorkerReply, ProbeWorkerRequest } from './probe-worker.ts';

/** Rejects with the worker's own error name and message; the worker is terminated either way. */
export function probeInWorker(timeoutMs = 60_000): Promise<ProbeResult> {
  const worker = new Worker(new URL('./probe-worker.ts', import.meta.url), {
    type: 'module',
    name: 'merge-studio-probe',
  });
  return new Promise<ProbeResult>((resolve, reject) => {
    const settle = (finish: () => void): void => {
      clearTimeout(timer);
      worker.terminate();
      finish();
    };
    const timer = setTimeout(
      () =>
        settle(() => reject(new Error(`The self-test worker did not answer within ${timeoutMs / 1000} s.`))),
      timeoutMs,
    );
    worker.addEventListener('message', (event: MessageEvent<ProbeWorkerReply>) => {
      const reply = event.data;
      if (reply.kind === 'result') settle(() => resolve(reply.result));
      else settle(() => reject(Object.assign(new Error(reply.message), { name: reply.name })));
    });
    worker.addEventListener('error', (event: ErrorEvent) => {
      // A module worker that fails to load reports an ErrorEvent without a message.
      const detail = event.message || 'its script could not be loaded or threw at start';
      settle(() => reject(new Error(`The self-test worker failed: ${detail}.`)));
    });
    const request: ProbeWorkerRequest = { kind: 'probe' };
    worker.postMessage(request);
  });
}

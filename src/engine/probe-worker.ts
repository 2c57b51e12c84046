// Dedicated-worker entry that runs the GPU self-test off the main thread and posts the result back.
import { probeGpu, type ProbeResult } from './probe.ts';

export type ProbeWorkerRequest = { kind: 'probe' };
export type ProbeWorkerReply =
  { kind: 'result'; result: ProbeResult } | { kind: 'error'; name: string; message: string };

addEventListener('message', (event: MessageEvent<ProbeWorkerRequest>) => {
  if (event.data.kind === 'probe') void answer();
});

async function answer(): Promise<void> {
  let reply: ProbeWorkerReply;
  try {
    // A worker's navigator may lack gpu even where the page has it (older browsers).
    const gpu = (navigator as { gpu?: GPU }).gpu;
    if (!gpu) throw new Error('WebGPU (navigator.gpu) is not available inside a Web Worker in this browser.');
    reply = { kind: 'result', result: await probeGpu(gpu) };
  } catch (error) {
    reply =
      error instanceof Error
        ? { kind: 'error', name: error.name, message: error.message }
        : { kind: 'error', name: 'Error', message: String(error) };
  }
  postMessage(reply);
}

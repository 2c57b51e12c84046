// The TIES top-k select on the GPU: per agent, the exact threshold and how many of its ties to keep,
// from histograms of the |τ| bit patterns counted by topk_hist.wgsl over the tensor's windows.

import {
  RADIX_BINS,
  RADIX_DIGITS,
  settleSingleKey,
  startTopK,
  stepTopK,
  type TopKState,
} from '../methods/select.ts';
import type { TensorInput } from '../methods/merge-types.ts';
import type { Kernel, KernelIo } from './kernels/kernel.ts';
import { createTopKHistKernel, histogramBin, histogramCounts, TOPK_HIST_SLOTS } from './kernels/topk_hist.ts';
import { encodeAgents, type WindowParams } from './layout.ts';
import { countGroups, type Dispatch, type Window } from './plumbing.ts';
import type { Scheduler } from './scheduler.ts';

/** What the select needs of an engine's job: the tensor and its windows. */
export interface SelectJob {
  tensor: TensorInput;
  windows: readonly Window[];
}

/** One counting pass over a job's windows, with the base uploaded beside the agents. */
export interface SelectPass {
  label: string;
  /** The windows in visiting order (a histogram does not depend on it). */
  order: readonly Window[];
  groups(w: Window): number;
  /** The pass's own parameters; the host adds the window's. */
  params(w: Window, d: Dispatch): Partial<WindowParams>;
  /** `io`: the window's buffers (params, inputs, agents) as the host binds them. */
  encode(encoder: GPUCommandEncoder, io: KernelIo, d: Dispatch): void;
}

/** The engine's side of the select: its device, queue, per-agent buffer, kernel cache and window loop. */
export interface SelectHost<J extends SelectJob> {
  readonly device: GPUDevice;
  readonly scheduler: Scheduler;
  readonly agents: number;
  readonly agentBuffer: GPUBuffer;
  kernel(key: string, make: () => Promise<Kernel>): Promise<Kernel>;
  /** Runs the pass over every window; windows still resident from the last pass are not read again. */
  countPass(job: J, pass: SelectPass): Promise<void>;
}

/**
 * The windows of a pass whose result does not depend on their order, visited so that it ends on the
 * first two: the merge that follows starts on them while the two buffer sets still hold them.
 */
export function endOnFirstWindows(windows: readonly Window[]): Window[] {
  return [...windows.slice(2), ...windows.slice(0, 2)];
}

export class TopKSelect<J extends SelectJob> {
  private histogram: GPUBuffer | null = null;
  private readback: GPUBuffer | null = null;
  /** Per buffer set of the host: its io plus the histogram (stable objects, so bind groups are cached). */
  private readonly ios = new WeakMap<KernelIo, KernelIo>();

  constructor(private readonly host: SelectHost<J>) {}

  /**
   * Settles every requested top-k: `counts[i]` is a top-k of agent i mod N (Model Breadcrumbs asks
   * two per agent). One histogram pass per radix digit while any is unsettled, the second only for a
   * top-k whose first-digit bin holds more than one distinct key. The first digit is counted under an
   * empty prefix, so its one histogram per agent serves every top-k of that agent; a second digit is
   * counted under each top-k's own prefix, one pass per N of them.
   */
  async select(job: J, counts: readonly number[]): Promise<TopKState[]> {
    const { tensor } = job;
    const host = this.host;
    const n = host.agents;
    let states = counts.map((k) => startTopK(k, tensor.numel));
    const kernel = await host.kernel(`topk_hist:${tensor.dtype}`, () =>
      createTopKHistKernel(host.device, tensor.dtype, host.agents),
    );
    const { histogram, readback } = this.buffers();
    const all = states.map((_, i) => i);
    for (const [digit, { shift, bits }] of RADIX_DIGITS.entries()) {
      // Each pass's top-ks, by index: all of them on the first digit, else N at a time.
      const passes =
        digit === 0
          ? [all]
          : Array.from({ length: Math.ceil(all.length / n) }, (_, g) => all.slice(g * n, g * n + n));
      for (const pass of passes) {
        const members = new Set(pass);
        const counted = states.map((s, i) => members.has(i) && s.searching);
        if (!counted.includes(true)) continue;
        const agents = Array.from({ length: n }, (_, t) => {
          const own = states.filter((_, i) => counted[i] && i % n === t);
          return { prefix: own[0]?.prefix ?? 0, searching: own.length > 0 };
        });
        host.scheduler.write(host.agentBuffer, 0, encodeAgents(agents));
        host.scheduler.submit('topk_hist.clear', (encoder) => encoder.clearBuffer(histogram));
        await host.countPass(job, {
          label: `topk_hist[${digit}]`,
          order: endOnFirstWindows(job.windows),
          groups: (w) => countGroups(w.count),
          params: () => ({ digitShift: shift, digitBits: bits }),
          encode: (encoder, io, d) => kernel.encode(encoder, this.io(io, histogram), d),
        });
        host.scheduler.submit('topk_hist.readback', (encoder) =>
          encoder.copyBufferToBuffer(histogram, 0, readback, 0, histogram.size),
        );
        const words = new Uint32Array((await host.scheduler.read(readback, histogram.size)).buffer);
        states = states.map((s, i) => {
          if (!counted[i]) return s;
          const t = i % n;
          const next = stepTopK(s, histogramCounts(words, t, bits), digit);
          // The first digit's bin bounds settle it now when that bin holds a single key.
          if (digit > 0 || !next.searching) return next;
          const bin = histogramBin(words, t, (next.prefix >>> shift) & ((1 << bits) - 1), shift);
          return settleSingleKey(next, bin.least, bin.greatest);
        });
      }
    }
    return states;
  }

  destroy(): void {
    this.histogram?.destroy();
    this.readback?.destroy();
    this.histogram = this.readback = null;
  }

  private buffers(): { histogram: GPUBuffer; readback: GPUBuffer } {
    const bytes = this.host.agents * RADIX_BINS * TOPK_HIST_SLOTS * 4;
    const device = this.host.device;
    this.histogram ??= device.createBuffer({
      label: 'TopKSelect.histogram',
      size: bytes,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    this.readback ??= device.createBuffer({
      label: 'TopKSelect.readback',
      size: bytes,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    return { histogram: this.histogram, readback: this.readback };
  }

  private io(hostIo: KernelIo, histogram: GPUBuffer): KernelIo {
    let io = this.ios.get(hostIo);
    if (io?.histogram !== histogram) {
      io = { ...hostIo, histogram };
      this.ios.set(hostIo, io);
    }
    return io;
  }
}

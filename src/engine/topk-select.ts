// The TIES top-k select on the GPU: per agent, the exact threshold and how many of its ties to keep.
// First a sample of the |τ| keys (topk_sample.wgsl) guesses each threshold's key, and one cheap
// counting pass (topk_count.wgsl) confirms it exactly where the sample saw one key all around k's rank
// (topk-bracket.ts): the usual case on 16-bit weights, whose |τ| take few distinct values. A tensor the
// sample took whole needs no pass at all. What is still unsettled, and every f32 tensor, goes through
// the radix select: histograms of the key bits counted by topk_hist.wgsl, one pass per digit.

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
import { countGroups, pad4, WORKGROUP_SIZE, type Dispatch, type Window } from './plumbing.ts';
import type { Scheduler } from './scheduler.ts';
import { BRACKET_COUNTS, bracketGroups, createTopKCountKernel } from './kernels/topk_count.ts';
import { createTopKSampleKernel, NO_KEY } from './kernels/topk_sample.ts';
import { chooseBracket, exactTopK, settleBracket, sortedKeys, type Bracket } from './topk-bracket.ts';

/** What the select needs of an engine's job: the tensor and its windows. */
export interface SelectJob {
  tensor: TensorInput;
  windows: readonly Window[];
}

/** How one top-k was settled, for tests and benchmarks: the routes of a tensor's select. */
export type SelectRoute = 'trivial' | 'sample' | 'bracket' | 'radix';

/** Element pairs sampled per agent (SAMPLE_PAIRS): 65536 keys, 256 KiB per agent to read back. */
export const SAMPLE_PAIRS = 32768;

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
  /** Try the sampled select before the radix one. */
  readonly sampled: boolean;
  /** Told how each top-k of a select was settled, in order. */
  onRoutes?: (tensor: string, routes: readonly SelectRoute[]) => void;
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

/**
 * Whether one count pass over these brackets costs less than the radix select's first histogram
 * pass, which counts every row at once: in kernel-profile (SwiftShader, N = 3, bf16) a dispatch of
 * up to four rows costs about one RAM merge kernel and the histogram pass about 2.6, so up to two
 * dispatches of four rows.
 */
export function countPassPays(brackets: readonly (Bracket | null)[]): boolean {
  let dispatches = 0;
  for (let first = 0; first < brackets.length; first += 4)
    if (brackets.slice(first, first + 4).some((b) => b)) dispatches++;
  return dispatches <= 2;
}

export class TopKSelect<J extends SelectJob> {
  private histogram: GPUBuffer | null = null;
  private readback: GPUBuffer | null = null;
  private bracket: GPUBuffer | null = null;
  /** Per buffer set of the host: its io plus the select's buffers (io()). */
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
    const start = counts.map((k) => startTopK(k, tensor.numel));
    const routes: SelectRoute[] = start.map((s) => (s.searching ? 'radix' : 'trivial'));
    let states = start;
    // A sample serves every dtype where it takes the whole tensor; else the count kernel reads 16-bit
    // slots as vec4 (slotBytesFor puts every slot on 16 bytes).
    const whole = job.windows.length === 1 && Math.ceil(tensor.numel / 2) <= SAMPLE_PAIRS;
    const countable = tensor.dtype !== 'F32';
    if (this.host.sampled && states.some((s) => s.searching) && (whole || countable)) {
      states = await this.sampled(job, counts, states, routes, whole);
    }
    states = await this.radix(job, states);
    this.host.onRoutes?.(tensor.name, routes);
    return states;
  }

  /**
   * The sampled select: settles what a sample of one window and one count pass can, marking
   * each top-k's route; the rest is returned still searching, as it started. `whole`: the sample
   * takes every pair of the tensor, so each top-k is exact from it.
   */
  private async sampled(
    job: J,
    counts: readonly number[],
    states: readonly TopKState[],
    routes: SelectRoute[],
    whole: boolean,
  ): Promise<TopKState[]> {
    const { tensor } = job;
    const host = this.host;
    const n = host.agents;
    const { histogram, readback } = this.buffers();
    // The sample is taken from the window the count pass starts on, which it then finds resident.
    const order = endOnFirstWindows(job.windows);
    const sampled = order[0];
    if (!sampled) return [...states];
    const sampler = await host.kernel(`topk_sample:${tensor.dtype}`, () =>
      createTopKSampleKernel(host.device, tensor.dtype, n, SAMPLE_PAIRS),
    );
    await host.countPass(job, {
      label: 'topk_sample',
      order: [sampled],
      groups: () => Math.ceil(SAMPLE_PAIRS / WORKGROUP_SIZE),
      params: () => ({}),
      encode: (encoder, io, d) => sampler.encode(encoder, this.io(io), d),
    });
    const sampleWords = n * 2 * SAMPLE_PAIRS;
    const words = await this.readBack(histogram, readback, sampleWords * 4);
    const keys = Array.from({ length: n }, (_, t) =>
      sortedKeys(words.subarray(t * 2 * SAMPLE_PAIRS, (t + 1) * 2 * SAMPLE_PAIRS)),
    );
    const next = [...states];
    const brackets: (Bracket | null)[] = states.map((s, i) => {
      if (!s.searching) return null;
      const sorted = keys[i % n] ?? new Uint32Array(0);
      if (whole) {
        next[i] = exactTopK(sorted, counts[i] ?? 0);
        routes[i] = 'sample';
        return null;
      }
      return chooseBracket(sorted, counts[i] ?? 0, tensor.numel);
    });
    if (!brackets.some((b) => b) || !countPassPays(brackets)) return next;
    const found = await this.countBrackets(job, brackets, order);
    brackets.forEach((b, i) => {
      if (!b) return;
      const row = found.subarray(i * BRACKET_COUNTS, (i + 1) * BRACKET_COUNTS);
      const state = settleBracket(b, { above: row[0] ?? 0, equal: row[1] ?? 0 }, counts[i] ?? 0);
      if (state) {
        next[i] = state;
        routes[i] = 'bracket';
      }
    });
    return next;
  }

  /** One count pass over the tensor for every bracket (rows without one count nothing); its counters. */
  private async countBrackets(
    job: J,
    brackets: readonly (Bracket | null)[],
    order: readonly Window[],
  ): Promise<Uint32Array> {
    const { tensor } = job;
    const host = this.host;
    const n = host.agents;
    const { histogram, readback } = this.buffers();
    const bracketBuffer = this.bracketBuffer(brackets.length);
    // A row without a bracket counts keys above NO_KEY and equal to it: none.
    const rows = Uint32Array.from(brackets, (b) => b?.key ?? NO_KEY);
    host.scheduler.write(bracketBuffer, 0, new Uint8Array(rows.buffer));
    // Dispatches of up to four rows, skipping those with no bracket.
    const dispatches: Kernel[] = [];
    for (let firstRow = 0; firstRow < brackets.length; firstRow += 4) {
      const group = brackets.slice(firstRow, firstRow + 4);
      if (!group.some((b) => b)) continue;
      dispatches.push(
        await host.kernel(`topk_count:${tensor.dtype}:${firstRow}:${group.length}`, () =>
          createTopKCountKernel(host.device, tensor.dtype, n, firstRow, group.length),
        ),
      );
    }
    const bytes = brackets.length * BRACKET_COUNTS * 4;
    host.scheduler.submit('topk_count.clear', (encoder) => encoder.clearBuffer(histogram, 0, bytes));
    await host.countPass(job, {
      label: 'topk_count',
      order,
      groups: (w) => bracketGroups(w.count),
      params: () => ({}),
      encode: (encoder, io, d) => {
        for (const kernel of dispatches) kernel.encode(encoder, this.io(io), d);
      },
    });
    return this.readBack(histogram, readback, bytes);
  }

  /** The radix select of every top-k still searching: one histogram pass per digit while any is. */
  private async radix(job: J, start: readonly TopKState[]): Promise<TopKState[]> {
    const { tensor } = job;
    const host = this.host;
    const n = host.agents;
    let states = [...start];
    if (!states.some((s) => s.searching)) return states;
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
          encode: (encoder, io, d) => kernel.encode(encoder, this.io(io), d),
        });
        const words = await this.readBack(histogram, readback, histogram.size);
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

  /** Copies the first `bytes` of the histogram buffer out after the work submitted so far. */
  private async readBack(histogram: GPUBuffer, readback: GPUBuffer, bytes: number): Promise<Uint32Array> {
    this.host.scheduler.submit('topk.readback', (encoder) =>
      encoder.copyBufferToBuffer(histogram, 0, readback, 0, bytes),
    );
    return new Uint32Array((await this.host.scheduler.read(readback, bytes)).buffer);
  }

  destroy(): void {
    this.histogram?.destroy();
    this.readback?.destroy();
    this.bracket?.destroy();
    this.histogram = this.readback = this.bracket = null;
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

  /** Room for `rows` brackets; grown when a select asks more (Model Breadcrumbs asks 2N rows). */
  private bracketBuffer(rows: number): GPUBuffer {
    const bytes = pad4(rows * 4);
    if (this.bracket && this.bracket.size >= bytes) return this.bracket;
    this.bracket?.destroy();
    this.bracket = this.host.device.createBuffer({
      label: 'TopKSelect.bracket',
      size: bytes,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    });
    return this.bracket;
  }

  /** A buffer set's io plus the select's histogram and bracket (stable objects, so bind groups are cached). */
  private io(hostIo: KernelIo): KernelIo {
    const { histogram } = this.buffers();
    const bracket = this.bracket;
    let io = this.ios.get(hostIo);
    if (io?.histogram !== histogram || io.bracket !== (bracket ?? undefined)) {
      io = bracket ? { ...hostIo, histogram, bracket } : { ...hostIo, histogram };
      this.ios.set(hostIo, io);
    }
    return io;
  }
}

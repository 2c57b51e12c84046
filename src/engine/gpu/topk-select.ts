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
} from '../../methods/select.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import type { Kernel, KernelIo, KernelRequest } from './kernels/kernel.ts';
import { histogramBin, histogramCounts, TOPK_HIST_SLOTS, topKHistRequest } from './kernels/topk_hist.ts';
import { encodeAgents, type WindowParams } from './layout.ts';
import { countGroups, pad4, WORKGROUP_SIZE, type Dispatch, type Window } from './plumbing.ts';
import type { Scheduler } from './scheduler.ts';
import {
  BRACKET_COUNTS,
  BRACKET_HEADER,
  bracketGroups,
  CHUNK_ELEMENTS,
  topKCountRequest,
} from './kernels/topk_count.ts';
import { NO_KEY, topKSampleRequest } from './kernels/topk_sample.ts';
import {
  chooseBracket,
  exactTopK,
  needsBetween,
  settleBracket,
  rankKeys,
  tieChunk,
  type Bracket,
  type BracketCounts,
  type RankedKeys,
} from './topk-bracket.ts';

/** What the select needs of an engine's job: the tensor and its windows. */
export interface SelectJob {
  tensor: TensorInput;
  windows: readonly Window[];
}

/**
 * How one top-k was settled, for tests and benchmarks: the routes of a tensor's select. `bracket`:
 * by the count pass's counts; `between`: by the keys it collected between the bracket's ends.
 */
export type SelectRoute = 'trivial' | 'sample' | 'bracket' | 'between' | 'radix';

/** Element pairs sampled per agent (SAMPLE_PAIRS): 65536 keys, 256 KiB per agent to read back. */
export const SAMPLE_PAIRS = 32768;

/**
 * Most keys the count pass collects between the brackets' ends, all rows together (16 MiB, and as
 * much again to read them back): about 1.2% of a tensor lies within the sample's bracket of a
 * median threshold, so rows of up to ~100M elements each fit three to a pass; past that the radix
 * select settles them.
 */
export const MAX_COLLECTED = 1 << 22;

/**
 * Where a threshold's first tie not kept lies: the tensor's elements [first, end) (one chunk of the
 * count pass), `before` of its ties ahead of them. The merge then marks ties there only
 * (AgentParams.tieFirst), counting tiesToKeep − before of them.
 */
export interface TieSpan {
  first: number;
  end: number;
  before: number;
}

/** A settled top-k, with the span of its first tie not kept where the count pass found one. */
export type SelectedTopK = TopKState & { span?: TieSpan };

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
  /** The pipeline of a request, from the engine's cache (kernel-cache.ts). */
  kernel(request: KernelRequest): Promise<Kernel>;
  /** Try the sampled select before the radix one. */
  readonly sampled: boolean;
  /** Keys the count pass may collect, all rows together (default MAX_COLLECTED). */
  readonly maxCollected?: number;
  /** Told how each top-k of a select was settled, in order. */
  onRoutes?: (
    tensor: string,
    routes: readonly SelectRoute[],
    spans: readonly (TieSpan | undefined)[],
  ) => void;
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

/** A bracket whose ends differ: the count pass collects the keys between them. */
export function collects(b: Bracket | null | undefined): boolean {
  return !!b && b.lo !== b.hi;
}

/**
 * The order the count pass counts the rows with a bracket in: those that collect keys between their
 * ends first, filling whole dispatches of four, so that they take as few dispatches as they can; then
 * those of one key.
 */
export function countOrder(brackets: readonly (Bracket | null)[]): number[] {
  const rows = brackets.flatMap((b, i) => (b ? [i] : []));
  return [...rows.filter((i) => collects(brackets[i])), ...rows.filter((i) => !collects(brackets[i]))];
}

/** The count pass's dispatches: up to four places of countOrder each, and whether one collects. */
function countDispatches(
  brackets: readonly (Bracket | null)[],
): { first: number; rows: number; collect: boolean }[] {
  const places = countOrder(brackets);
  const dispatches = [];
  for (let first = 0; first < places.length; first += 4) {
    const group = places.slice(first, first + 4);
    dispatches.push({ first, rows: group.length, collect: group.some((row) => collects(brackets[row])) });
  }
  return dispatches;
}

/**
 * Whether one count pass over these brackets costs less than what it spares: the radix select's first
 * histogram pass, which counts every row at once, and the tie marks over whole windows that the count
 * pass's tie spans replace. In kernel-profile (SwiftShader, N = 3, bf16) a dispatch of up to four
 * one-key rows costs about one RAM merge kernel, one that collects keys between a bracket's ends up to
 * about two, the histogram pass about 2.6 and the marks about 0.5: so at most three units.
 */
export function countPassPays(brackets: readonly (Bracket | null)[]): boolean {
  return countDispatches(brackets).reduce((cost, d) => cost + (d.collect ? 2 : 1), 0) <= 3;
}

export class TopKSelect<J extends SelectJob> {
  private histogram: GPUBuffer | null = null;
  /** Every readback of the select (readRanges): grown on demand. */
  private readback: GPUBuffer | null = null;
  private bracket: GPUBuffer | null = null;
  /** The count pass's keys between the brackets' ends and its ties per chunk: grown on demand. */
  private collected: GPUBuffer | null = null;
  private chunks: GPUBuffer | null = null;
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
  async select(job: J, counts: readonly number[]): Promise<SelectedTopK[]> {
    const { tensor } = job;
    const start = counts.map((k) => startTopK(k, tensor.numel));
    const routes: SelectRoute[] = start.map((s) => (s.searching ? 'radix' : 'trivial'));
    let states: SelectedTopK[] = start;
    // A sample serves every dtype where it takes the whole tensor; else the count kernel reads 16-bit
    // slots as vec4 (slotBytesFor puts every slot on 16 bytes).
    const whole = job.windows.length === 1 && Math.ceil(tensor.numel / 2) <= SAMPLE_PAIRS;
    const countable = tensor.dtype !== 'F32';
    if (this.host.sampled && states.some((s) => s.searching) && (whole || countable)) {
      states = await this.sampled(job, counts, states, routes, whole);
    }
    states = await this.radix(job, states);
    this.host.onRoutes?.(
      tensor.name,
      routes,
      states.map((s) => s.span),
    );
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
  ): Promise<SelectedTopK[]> {
    const { tensor } = job;
    const host = this.host;
    const n = host.agents;
    const { histogram } = this.buffers();
    // The sample is taken from the window the count pass starts on, which it then finds resident.
    const order = endOnFirstWindows(job.windows);
    const sampled = order[0];
    if (!sampled) return [...states];
    const sampler = await host.kernel(topKSampleRequest(tensor.dtype, n, SAMPLE_PAIRS));
    await host.countPass(job, {
      label: 'topk_sample',
      order: [sampled],
      groups: () => Math.ceil(SAMPLE_PAIRS / WORKGROUP_SIZE),
      params: () => ({}),
      encode: (encoder, io, d) => sampler.encode(encoder, this.io(io), d),
    });
    const sampleWords = n * 2 * SAMPLE_PAIRS;
    const [words = new Uint32Array(0)] = await this.readRanges([
      { buffer: histogram, offset: 0, words: sampleWords },
    ]);
    // Each agent's sample ranked once, and only where one of its top-ks is still searching.
    const ranks = new Map<number, RankedKeys>();
    const ranked = (t: number): RankedKeys => {
      let r = ranks.get(t);
      if (!r) {
        r = rankKeys(words.subarray(t * 2 * SAMPLE_PAIRS, (t + 1) * 2 * SAMPLE_PAIRS));
        ranks.set(t, r);
      }
      return r;
    };
    const next: SelectedTopK[] = [...states];
    const brackets: (Bracket | null)[] = states.map((s, i) => {
      if (!s.searching) return null;
      if (whole) {
        next[i] = exactTopK(ranked(i % n), counts[i] ?? 0);
        routes[i] = 'sample';
        return null;
      }
      return chooseBracket(ranked(i % n), counts[i] ?? 0, tensor.numel);
    });
    if (!brackets.some((b) => b) || !countPassPays(brackets)) return next;
    const found = await this.countBrackets(job, brackets, counts, order);
    brackets.forEach((b, i) => {
      const row = found.rows[i];
      if (!b || !row) return;
      const state = settleBracket(b, row.counts, row.between, counts[i] ?? 0);
      if (!state) return;
      routes[i] = row.between ? 'between' : 'bracket';
      // A threshold on either end of the bracket keeping part of its ties: the chunk of its first
      // tie not kept, from the pass's per-chunk counts of that end's key.
      const end = state.threshold === b.hi ? 0 : state.threshold === b.lo ? 1 : -1;
      const chunk =
        state.tiesToKeep > 0 && end >= 0 ? tieChunk(found.chunkTies(i, end), state.tiesToKeep) : null;
      const span = chunk && found.chunkSpan(chunk.chunk);
      next[i] = span ? { ...state, span: { ...span, before: chunk.before } } : state;
    });
    return next;
  }

  /**
   * One count pass over the tensor for every bracket (rows without one count nothing): per row its
   * counts, and the keys it collected between lo and hi where its k falls among them (else null);
   * each row's ties of hi (end 0) and lo (end 1) per chunk, and the elements of a chunk.
   */
  private async countBrackets(
    job: J,
    brackets: readonly (Bracket | null)[],
    counts: readonly number[],
    order: readonly Window[],
  ): Promise<{
    rows: { counts: BracketCounts; between: Uint32Array | null }[];
    chunkTies(row: number, end: number): Uint32Array;
    chunkSpan(chunk: number): { first: number; end: number } | null;
  }> {
    const { tensor } = job;
    const host = this.host;
    const n = host.agents;
    const { histogram } = this.buffers();
    const rows = brackets.length;
    // Room per row for the most keys any row's sample put between its ends, with some to spare.
    const ranged = brackets.filter(collects).map((b) => b?.between ?? 0);
    const room = ranged.length
      ? Math.min(
          Math.ceil(Math.max(...ranged) * 1.5) + 4096,
          Math.floor((host.maxCollected ?? MAX_COLLECTED) / rows),
        )
      : 0;
    // Chunks numbered in element order, window by window.
    const chunkBase: number[] = [];
    let chunks = 0;
    for (const w of job.windows) {
      chunkBase[w.index] = chunks;
      chunks += bracketGroups(w.count);
    }
    const places = countOrder(brackets);
    const io = this.countBuffers(
      Math.max(1, room * rows),
      2 * rows * chunks,
      BRACKET_HEADER + 3 * places.length,
    );
    const words = new Uint32Array(BRACKET_HEADER + 3 * places.length);
    words[0] = room;
    words[1] = chunks;
    places.forEach((row, p) => {
      const b = brackets[row];
      words[BRACKET_HEADER + 3 * p] = row;
      words[BRACKET_HEADER + 3 * p + 1] = b?.hi ?? NO_KEY;
      words[BRACKET_HEADER + 3 * p + 2] = b && collects(b) ? b.lo : NO_KEY;
    });
    host.scheduler.write(io.bracket, 0, new Uint8Array(words.buffer));
    const dispatches: Kernel[] = [];
    for (const { first, rows: count, collect } of countDispatches(brackets))
      dispatches.push(await host.kernel(topKCountRequest(tensor.dtype, n, first, count, collect)));
    const bytes = rows * BRACKET_COUNTS * 4;
    host.scheduler.submit('topk_count.clear', (encoder) => encoder.clearBuffer(histogram, 0, bytes));
    await host.countPass(job, {
      label: 'topk_count',
      order,
      groups: (w) => bracketGroups(w.count),
      params: (w) => ({ chunkBase: chunkBase[w.index] ?? 0 }),
      encode: (encoder, hostIo, d) => {
        for (const kernel of dispatches) kernel.encode(encoder, this.io(hostIo), d);
      },
    });
    const [found, ties] = await this.readRanges([
      { buffer: histogram, offset: 0, words: rows * BRACKET_COUNTS },
      // Rows without a bracket hold zeros or an earlier tensor's chunks: they are never asked.
      { buffer: io.chunks, offset: 0, words: 2 * rows * chunks },
    ]);
    const result = brackets.map((b, i): { counts: BracketCounts; between: Uint32Array | null } => {
      const at = i * BRACKET_COUNTS;
      const row: BracketCounts = {
        above: found?.[at] ?? 0,
        equalHi: found?.[at + 1] ?? 0,
        equalLo: found?.[at + 2] ?? 0,
        between: found?.[at + 3] ?? 0,
      };
      const wanted = b !== null && needsBetween(b, row, counts[i] ?? 0) && row.between <= room;
      return { counts: row, between: wanted ? new Uint32Array(0) : null };
    });
    // The collected keys of the rows that need them, in one readback.
    const wanted = result.flatMap((r, i) => (r.between ? [i] : []));
    const keys = await this.readRanges(
      wanted.map((i) => ({ buffer: io.collected, offset: i * room, words: result[i]?.counts.between ?? 0 })),
    );
    wanted.forEach((i, j) => {
      const r = result[i];
      if (r) r.between = keys[j] ?? null;
    });
    return {
      rows: result,
      chunkTies: (row, end) =>
        (ties ?? new Uint32Array(0)).subarray((2 * row + end) * chunks, (2 * row + end + 1) * chunks),
      chunkSpan: (chunk) => {
        // The chunk's window: the last whose first chunk is at or before it.
        const w = job.windows.findLast((v) => (chunkBase[v.index] ?? 0) <= chunk);
        if (!w) return null;
        const first = w.start + (chunk - (chunkBase[w.index] ?? 0)) * CHUNK_ELEMENTS;
        return { first, end: Math.min(first + CHUNK_ELEMENTS, w.start + w.count) };
      },
    };
  }

  /** Copies ranges of u32 words out of GPU buffers after the work submitted so far, in one readback. */
  private async readRanges(
    ranges: readonly { buffer: GPUBuffer; offset: number; words: number }[],
  ): Promise<Uint32Array[]> {
    if (ranges.length === 0) return [];
    const total = ranges.reduce((sum, r) => sum + r.words, 0);
    this.readback = this.grow(
      this.readback,
      'readback',
      total,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    const out = this.readback;
    const starts: number[] = [];
    let at = 0;
    for (const r of ranges) {
      starts.push(at);
      at += r.words;
    }
    this.host.scheduler.submit('topk.readback', (encoder) => {
      ranges.forEach((r, i) => {
        if (r.words > 0)
          encoder.copyBufferToBuffer(r.buffer, r.offset * 4, out, (starts[i] ?? 0) * 4, r.words * 4);
      });
    });
    const words = new Uint32Array((await this.host.scheduler.read(out, Math.max(1, total) * 4)).buffer);
    return ranges.map((r, i) => words.slice(starts[i] ?? 0, (starts[i] ?? 0) + r.words));
  }

  /** The radix select of every top-k still searching: one histogram pass per digit while any is. */
  private async radix(job: J, start: readonly TopKState[]): Promise<TopKState[]> {
    const { tensor } = job;
    const host = this.host;
    const n = host.agents;
    let states = [...start];
    if (!states.some((s) => s.searching)) return states;
    const kernel = await host.kernel(topKHistRequest(tensor.dtype, host.agents));
    const { histogram } = this.buffers();
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
        const [words = new Uint32Array(0)] = await this.readRanges([
          { buffer: histogram, offset: 0, words: histogram.size / 4 },
        ]);
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
    for (const b of [this.histogram, this.bracket, this.collected, this.chunks, this.readback]) b?.destroy();
    this.histogram = this.bracket = this.collected = this.chunks = this.readback = null;
  }

  private buffers(): { histogram: GPUBuffer } {
    this.histogram ??= this.host.device.createBuffer({
      label: 'TopKSelect.histogram',
      size: this.host.agents * RADIX_BINS * TOPK_HIST_SLOTS * 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    return { histogram: this.histogram };
  }

  /** `have`, or a new buffer of at least `words` words in its place (grown, never shrunk). */
  private grow(have: GPUBuffer | null, label: string, words: number, usage: GPUBufferUsageFlags): GPUBuffer {
    const bytes = pad4(Math.max(1, words) * 4);
    if (have && have.size >= bytes) return have;
    have?.destroy();
    return this.host.device.createBuffer({ label: `TopKSelect.${label}`, size: bytes, usage });
  }

  /**
   * The count pass's own buffers, grown (never shrunk) to hold `collected` keys, `chunks` words of
   * ties per chunk and `bracket` words of brackets.
   */
  private countBuffers(
    collected: number,
    chunks: number,
    bracket: number,
  ): Record<'collected' | 'chunks' | 'bracket', GPUBuffer> {
    const storage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    this.collected = this.grow(this.collected, 'collected', collected, storage);
    this.chunks = this.grow(this.chunks, 'chunks', chunks, storage);
    this.bracket = this.grow(
      this.bracket,
      'bracket',
      bracket,
      GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    );
    return { collected: this.collected, chunks: this.chunks, bracket: this.bracket };
  }

  /**
   * A buffer set's io plus the select's histogram, bracket and collected keys (stable objects, so
   * bind groups are cached).
   */
  private io(hostIo: KernelIo): KernelIo {
    const { histogram } = this.buffers();
    const extra: Record<string, GPUBuffer> = { histogram };
    if (this.bracket) extra.bracket = this.bracket;
    if (this.collected) extra.collected = this.collected;
    if (this.chunks) extra.chunks = this.chunks;
    let io = this.ios.get(hostIo);
    if (!io || Object.entries(extra).some(([name, buffer]) => io?.[name] !== buffer)) {
      io = { ...hostIo, ...extra };
      this.ios.set(hostIo, io);
    }
    return io;
  }
}

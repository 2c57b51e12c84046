// How a tensor's bytes reach the GPU and come back: the walk of its windows that every pass of the
// GPU engine shares. Each window is read into one of two buffer sets (window i+1 is read while window
// i computes and reads back), traded in from the window cache where a pass before kept it, its
// dispatch split to the device's limits, its result read back and consumed in window order. What a
// pass computes is given as data (WindowPass); which passes a method runs is method-passes.ts's.

import { dtypeBits } from '../../format/dtype.ts';
import { at } from '../../io/checked.ts';
import { throwIfAborted } from '../../io/abort.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import type { WindowCacheReport } from '../contract.ts';
import { BufferSets, engineBuffer, type BufferSet } from './buffer-sets.ts';
import { branchWords } from './kernels/branches.ts';
import type { KernelIo } from './kernels/kernel.ts';
import { encodeParams, type WindowParams } from './layout.ts';
import {
  pad4,
  slotBytesFor,
  splitDispatch,
  tensorWindows,
  windowCapacity,
  windowElements,
  type Dispatch,
  type DriverMemory,
  type Window,
} from './plumbing.ts';
import type { Scheduler } from './scheduler.ts';
import { readSlots, windowParams } from './slot-reads.ts';
import { keptSlots, WindowCache } from './window-cache.ts';

/** One tensor's walk: its windows, their size, and what was read of them so far. */
export interface Job {
  serial: number;
  tensor: TensorInput;
  signal?: AbortSignal;
  inBytes: number;
  outBytes: number;
  /** Tie-count rows per agent the buffer sets hold for this job's merge. */
  tieRows: number;
  slotBytes: number;
  windows: Window[];
  /** The windows read from the files so far (of any pass). */
  read: Set<number>;
  /** The windows a buffer set let go of in a pass before the merge, kept or not (WindowCache.want). */
  wanted: Set<number>;
}

/** What one pass does with each window: the runner brings the window's bytes and takes its result. */
export interface WindowPass {
  label: string;
  withBase: boolean;
  /** The windows in visiting order, where the pass's result does not depend on it (default: in order). */
  order?: readonly Window[];
  /**
   * A pass before the merge: each window of the tensor that a buffer set lets go is kept where the
   * budget has room (WindowCache), for the passes after it.
   */
  keep?: boolean;
  groups(w: Window): number;
  /** The pass's own parameters; the runner adds the window's (windowParams). */
  params(w: Window, d: Dispatch): Partial<WindowParams>;
  encode(encoder: GPUCommandEncoder, set: BufferSet, w: Window, d: Dispatch): void;
  /**
   * Called once the last window is submitted, before its read-back: the engine's next call may
   * start (a merge's last pass passes it on, see GpuEngine.merge).
   */
  submitted?: () => void;
  result?: {
    source: 'output' | 'counters' | 'norms';
    /** Also read back the flags, at byte bytes(w) of the data consumed. */
    flags?: boolean;
    /** Also read back the set's branch counters (passed to consume). */
    branches?: boolean;
    bytes(w: Window): number;
    consume(w: Window, bytes: Uint8Array, branches?: Uint32Array): Promise<void> | void;
  };
}

/**
 * Windows that hold whole slabs of `slab` elements (a method that ranks within them: its rank
 * groups), with `scratchBytesPerElement` of the method's own GPU memory per window element.
 */
export interface WholeSlabs {
  slab: number;
  scratchBytesPerElement: number;
}

/** The most elements ≤ max that are whole slabs, at least one slab. */
function wholeSlabs(slab: number, max: number): number {
  return slab === 0 ? Math.max(1, max) : Math.max(1, Math.floor(max / slab)) * slab;
}

export interface PassRunnerOptions {
  device: GPUDevice;
  scheduler: Scheduler;
  agents: number;
  agentBuffer: GPUBuffer;
  carry: GPUBuffer;
  maxWindow: number;
  memoryBudget: number;
  driverMemory: DriverMemory;
  uploads: 'mapped' | 'copied';
  poisonOutput: boolean;
}

/** One buffer set's branch counters (kernels/branches.ts) and their own readback. */
interface BranchBuffers {
  counters: GPUBuffer;
  readback: GPUBuffer;
}

const noop = (): void => undefined;

/** The window cache's name for window `index` of the job numbered `job` (kept with the base). */
function keptTag(job: number, index: number): string {
  return `${job}/${index}`;
}

/** Whether set's inputs hold window w of job, with the base or (withBase false) without. */
function holding(set: BufferSet, job: Job, w: Window, withBase: boolean): boolean {
  const r = set.resident;
  return r !== null && r.job === job.serial && r.index === w.index && r.withBase === withBase;
}

export class PassRunner {
  private readonly sets: BufferSets;
  /** Windows a pass before a merge uploaded, kept for it where the budget has room. */
  private readonly cache: WindowCache;
  /** Per buffer set (by window parity): the merge kernels' branch counters, bound whether or not they count. */
  private readonly branchBuffers: BranchBuffers[];
  /** Per set's io object (a new one whenever its inputs buffer changes): the io with its branch counters. */
  private readonly mergeIos = new WeakMap<KernelIo, KernelIo>();
  private readonly device: GPUDevice;
  private readonly scheduler: Scheduler;
  private readonly agents: number;
  private serial = 0;
  /** The last window's consume of any pass (never rejects): every consume waits for the one before. */
  private consumed: Promise<void> = Promise.resolve();
  /** The set the next window goes to when neither holds it already: sets alternate across tensors. */
  private nextSet = 0;

  constructor(private readonly options: PassRunnerOptions) {
    const { device, agents } = options;
    this.device = device;
    this.scheduler = options.scheduler;
    this.agents = agents;
    const branchBytes = branchWords(agents) * 4;
    this.branchBuffers = [0, 1].map((i) => ({
      counters: engineBuffer(
        device,
        `set${i}.branches`,
        branchBytes,
        GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      ),
      readback: engineBuffer(
        device,
        `set${i}.branchReadback`,
        branchBytes,
        GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      ),
    }));
    this.sets = new BufferSets({
      device,
      agents,
      agentBuffer: options.agentBuffer,
      carry: options.carry,
      memoryBudget: options.memoryBudget,
      poisonOutput: options.poisonOutput,
    });
    this.cache = new WindowCache(device);
  }

  get windowCache(): WindowCacheReport {
    return { ...this.cache.counts, bytes: this.cache.bytes, shortBytes: this.cache.shortBytes };
  }

  /** Test aid: 0xFF bytes the size of the output, to poison it before every merge window (or null). */
  get poison(): Uint8Array | null {
    return this.sets.poison;
  }

  destroy(): void {
    this.sets.destroy();
    this.cache.destroy();
    for (const b of this.branchBuffers) for (const buffer of [b.counters, b.readback]) buffer.destroy();
  }

  /**
   * A tensor's walk, its windows sized to the device's binding limits and the memory budget for a
   * pass that writes outBytes per element and ranks ties in tieRows rows per agent (tieRowsPerAgent).
   * The buffer sets grow to hold them. `slabs`: windows of whole slabs, as many as fit a binding and a
   * quarter of the memory budget at the method's scratch bytes per element (at least one slab).
   */
  async job(
    tensor: TensorInput,
    signal: AbortSignal | undefined,
    outBytes: number,
    tieRows: number,
    slabs?: WholeSlabs,
  ): Promise<Job> {
    if (!Number.isSafeInteger(tensor.numel) || tensor.numel < 0)
      throw new RangeError(`bad element count ${tensor.numel}`);
    const { agents, memoryBudget } = this.options;
    const inBytes = dtypeBits(tensor.dtype) / 8;
    const limits = this.device.limits;
    let size = Math.max(
      1,
      Math.min(
        tensor.numel,
        windowElements({
          agents,
          inBytes,
          outBytes,
          tieRows,
          maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
          maxBufferSize: limits.maxBufferSize,
          maxComputeWorkgroupsPerDimension: limits.maxComputeWorkgroupsPerDimension,
          maxWindowElements: this.options.maxWindow,
          memoryBudget,
        }),
      ),
    );
    if (slabs) {
      const limit = Math.min(limits.maxStorageBufferBindingSize, memoryBudget / 4);
      size = wholeSlabs(slabs.slab, Math.min(size, Math.floor(limit / slabs.scratchBytesPerElement)));
    }
    const slotBytes = slotBytesFor(size, inBytes);
    if ((agents + 1) * slotBytes > limits.maxStorageBufferBindingSize)
      throw new RangeError(
        `${tensor.name}: a slab of ${slabs?.slab} elements (a window holds whole ones) does not fit one GPU window: merge with the CPU engine (--cpu)`,
      );
    await this.sets.ensure(windowCapacity(size, agents, inBytes, outBytes, tieRows));
    const room = this.sets.room;
    this.cache.fit(room.inputBytes, keptSlots(memoryBudget, room, this.options.driverMemory));
    return {
      serial: ++this.serial,
      tensor,
      signal,
      inBytes,
      outBytes,
      tieRows,
      slotBytes,
      windows: tensorWindows(tensor.numel, size),
      read: new Set(),
      wanted: new Set(),
    };
  }

  /**
   * Runs one pass over the job's windows, two buffer sets in flight, results consumed in order: after
   * the windows before, and after every consume of the calls before (a merge emits after the last).
   */
  async run(job: Job, pass: WindowPass): Promise<void> {
    let failure = null as { error: unknown } | null;
    const mine: Promise<void>[] = [];
    // Rejects once a window of this pass has failed; starts from the consumes before, which never do.
    let chain: Promise<void> = this.consumed;
    try {
      for (const w of pass.order ?? job.windows) {
        throwIfAborted(job.signal);
        const set = this.setFor(job, w, pass.withBase);
        await set.busy;
        if (failure) throw failure.error;
        await this.upload(job, set, w, pass.withBase, pass.keep ?? false);
        const d = splitDispatch(pass.groups(w), this.device.limits.maxComputeWorkgroupsPerDimension);
        this.scheduler.write(
          set.params,
          0,
          encodeParams({ ...windowParams(w, job.slotBytes, d), ...pass.params(w, d) }),
        );
        const result = pass.result;
        const bytes = result ? result.bytes(w) : 0;
        const flagBytes = result?.flags ? set.flags.size : 0;
        const branches = result?.branches ? this.branchSet(set) : undefined;
        // A new pass whose result outgrows the set's buffers (BufferSets sizes them) says so here.
        if (result && (bytes > set[result.source].size || bytes + flagBytes > set.readback.size))
          throw new Error(
            `${job.tensor.name}: pass ${pass.label} reads back ${bytes + flagBytes} bytes of ${result.source}, ` +
              `which holds ${set[result.source].size} (read-back room ${set.readback.size})`,
          );
        this.scheduler.submit(`${pass.label}[${w.index}]`, (encoder) => {
          pass.encode(encoder, set, w, d);
          if (result) encoder.copyBufferToBuffer(set[result.source], 0, set.readback, 0, bytes);
          if (flagBytes) encoder.copyBufferToBuffer(set.flags, 0, set.readback, bytes, flagBytes);
          if (branches)
            encoder.copyBufferToBuffer(branches.counters, 0, branches.readback, 0, branches.counters.size);
        });
        if (!result) continue;
        // Consumed in place, mapped: the set is not used again (set.busy) before both are released.
        const reading = this.scheduler.readMapped(set.readback, bytes + flagBytes);
        reading.catch(noop);
        const branchReading =
          branches && this.scheduler.readMapped(branches.readback, branches.readback.size);
        branchReading?.catch(noop);
        const previous = chain;
        chain = (async () => {
          try {
            const data = await reading;
            const counters = branchReading && (await branchReading).bytes;
            await previous;
            throwIfAborted(job.signal);
            await result.consume(
              w,
              data.bytes,
              counters && new Uint32Array(counters.buffer, counters.byteOffset, counters.byteLength / 4),
            );
          } finally {
            await Promise.all([reading, branchReading].map((r) => r?.then((m) => m.release(), noop)));
          }
        })();
        const settled = chain.then(noop, (error: unknown) => {
          failure ??= { error };
        });
        set.busy = settled;
        this.consumed = settled;
        mine.push(settled);
      }
      pass.submitted?.();
      await chain;
    } finally {
      // Nothing of this pass may still be mapping or emitting when the call returns.
      await Promise.all(mine);
    }
  }

  /** The branch counters that go with a buffer set. */
  branchSet(set: BufferSet): BranchBuffers {
    return at(this.branchBuffers, set.index, 'branch buffers');
  }

  /** The set's buffers and its branch counters, which the merge kernels bind. */
  mergeIo(set: BufferSet): KernelIo {
    let io = this.mergeIos.get(set.io);
    if (!io) {
      io = { ...set.io, branches: this.branchSet(set).counters };
      this.mergeIos.set(set.io, io);
    }
    return io;
  }

  /**
   * The set window w goes to: the one that still holds it from the last pass (so it is not read
   * again), else the one after the last window's, across passes and tensors: the set a tensor's
   * first window goes to is the one the tensor before may have finished with.
   */
  private setFor(job: Job, w: Window, withBase: boolean): BufferSet {
    const sets = this.sets.sets;
    let index = sets.findIndex((s) => holding(s, job, w, withBase));
    if (index < 0) index = this.nextSet;
    this.nextSet = 1 - index;
    return at(sets, index, 'buffer set');
  }

  /**
   * Reads window w of every input into the set's staging memory and uploads it into the set's
   * inputs, unless they hold it already: mapped (the reads land in a MAP_WRITE buffer, copied into the
   * inputs on the GPU) or copied (they land in host memory that one writeBuffer copies): uploads.
   * A window the window cache holds is traded in instead; with `keep`, the window the set lets go is
   * kept there first (keepEvicted).
   */
  private async upload(job: Job, set: BufferSet, w: Window, withBase: boolean, keep: boolean): Promise<void> {
    if (holding(set, job, w, withBase)) return;
    if (keep) this.keepEvicted(job, set);
    set.resident = null;
    const started = performance.now();
    const used = w.count * job.inBytes;
    const first = withBase ? 0 : 1;
    const slots = Array.from({ length: this.agents + 1 - first }, (_, i) => first + i);
    const from = first * job.slotBytes;
    const bytes = this.agents * job.slotBytes + pad4(used);
    // Kept by a pass before (with the base, which serves a pass without it as well): traded back in.
    const kept = this.cache.give(keptTag(job.serial, w.index), set.inputs);
    if (kept) {
      this.sets.swapInputs(set, kept);
      this.cache.reused(slots.length * used);
      this.holds(job, set, w, withBase);
      return;
    }
    if (job.read.has(w.index)) this.cache.reread(slots.length * used);
    job.read.add(w.index);
    const buffer = this.options.uploads === 'mapped' ? this.sets.staging(set) : null;
    let staging: Uint8Array;
    if (buffer) {
      set.stagingMapped ??= this.scheduler.mapForWrite(buffer);
      await set.stagingMapped;
      // The window's bytes only: each range is a new ArrayBuffer that V8 counts as external memory,
      // and whole 64 MiB ranges for small tensors made it collect garbage every few windows.
      staging = this.scheduler.mappedRange(buffer, bytes);
    } else staging = this.sets.hostStaging(set);
    try {
      // Each slot's last partial word zero-padded.
      await readSlots(job.tensor, slots, w.start, w.count, staging, job.slotBytes, pad4(used));
    } finally {
      if (buffer) {
        // Unmapped whether or not the reads succeeded: its range is handed out once per mapping.
        buffer.unmap();
        set.stagingMapped = null;
      }
    }
    this.scheduler.addUploadTime(performance.now() - started);
    if (buffer) {
      this.scheduler.submit('upload', (encoder) =>
        encoder.copyBufferToBuffer(buffer, from, set.inputs, from, bytes - from),
      );
      // Mapped again as soon as the copy is done, so that the next window's reads need not wait.
      const mapping = this.scheduler.mapForWrite(buffer);
      mapping.catch(noop);
      set.stagingMapped = mapping;
    } else {
      // Written once the queue has drained: a write while kernels still run finds Dawn's staging
      // memory in use and stages into new memory, which the device clears first (the studio's GPU
      // process spent 3.2–5.8 CPU-s of its main thread per TIES or ramplus_tl merge there, in memset
      // and page faults; 0.8–1.8 s with the wait). The reads above went on meanwhile.
      await this.scheduler.idle();
      this.scheduler.write(set.inputs, from, staging.subarray(from, bytes));
    }
    this.holds(job, set, w, withBase);
  }

  /** Notes that set holds window w of job (with or without the base). */
  private holds(job: Job, set: BufferSet, w: Window, withBase: boolean): void {
    set.resident = { job: job.serial, index: w.index, withBase };
  }

  /**
   * Before set lets go of a window of this job that it holds with the base: the window cache takes
   * the set's inputs buffer, where it has room, and the set takes a spare one.
   */
  private keepEvicted(job: Job, set: BufferSet): void {
    const held = set.resident;
    if (held?.job !== job.serial || !held.withBase) return;
    job.wanted.add(held.index);
    this.cache.want(job.wanted.size);
    const spare = this.cache.take(set.inputs, keptTag(held.job, held.index), job.serial);
    if (spare) this.sets.swapInputs(set, spare);
  }
}

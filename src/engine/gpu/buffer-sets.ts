// The GPU engine's two buffer sets: window i+1 is uploaded into one while window i computes and reads
// back from the other. They grow to the largest window so far, within the memory budget.
import { dareNormsBytes } from './kernels/dare_norms.ts';
import type { KernelIo } from './kernels/kernel.ts';
import { flagCount } from './kernels/merge-bindings.ts';
import { statsLayout } from './kernels/stats.ts';
import { PARAMS_BYTES } from './layout.ts';
import { pad4, TIE_BLOCK_WORDS, windowMemory, type WindowCapacity } from './plumbing.ts';

/** What a set's inputs hold: window `index` of the job numbered `job`, with the base or without. */
export interface Resident {
  job: number;
  index: number;
  withBase: boolean;
}

export interface BufferSet {
  /** 0 or 1: the set's place in BufferSets.sets. */
  index: number;
  inputs: GPUBuffer;
  output: GPUBuffer;
  counters: GPUBuffer;
  norms: GPUBuffer;
  /** The merge kernels' non-finite counters (shaders/common/finite.wgsl), read back after the output. */
  flags: GPUBuffer;
  tieCounts: GPUBuffer;
  params: GPUBuffer;
  readback: GPUBuffer;
  /**
   * The mappable buffer the inputs' reads land in, copied into `inputs` on the GPU: the reads are
   * the only copy of the bytes on this side (no writeBuffer copy on the calling thread). Made on
   * first use (BufferSets.staging), where uploads are mapped (GpuEngineOptions.uploads).
   */
  staging: GPUBuffer | null;
  /** Where uploads are copied (writeBuffer): the memory the inputs' reads land in, made on first use. */
  hostStaging: Uint8Array | null;
  /**
   * Resolves once `staging` is mapped for writing (it is created mapped, and mapped again as soon as
   * its copy is submitted); null while it is unmapped with no mapping asked for.
   */
  stagingMapped: Promise<void> | null;
  /** Every buffer a kernel may bind, by its WGSL name. */
  io: KernelIo;
  /** Which job's window the inputs buffer holds, and whether with the base. */
  resident: Resident | null;
  /**
   * Resolves when this set's previous window has been read back and consumed, whether or not that
   * succeeded (its pass reports the failure): never rejects, so the next job's wait cannot fail.
   */
  busy: Promise<void>;
}

/** What the sets share with their engine. */
export interface BufferSetsOptions {
  device: GPUDevice;
  agents: number;
  agentBuffer: GPUBuffer;
  carry: GPUBuffer;
  memoryBudget: number;
  /** Test aid: keep a 0xFF block the size of the output, to poison it before every merge window. */
  poisonOutput: boolean;
}

/**
 * The usage of a set's inputs buffer, and of the window cache's buffers, which trade places with them
 * (a function: WebGPU's constants exist only where WebGPU does).
 */
export function inputUsage(): GPUBufferUsageFlags {
  return GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
}

/** One engine buffer, labelled and padded to the 4-byte multiple WebGPU copies need. */
export function engineBuffer(
  device: GPUDevice,
  name: string,
  size: number,
  usage: GPUBufferUsageFlags,
): GPUBuffer {
  return device.createBuffer({ label: `MergeEngine.${name}`, size: Math.max(4, pad4(size)), usage });
}

/** A set's buffers, by their field (and label) names. */
type BufferPart = 'inputs' | 'output' | 'counters' | 'norms' | 'flags' | 'tieCounts' | 'params' | 'readback';

/** Which of a set's sized buffers a growth keeps (their size unchanged). */
interface Keep {
  inputs: boolean;
  output: boolean;
  ties: boolean;
}

/** The buffers of `set` that a growth keeping `keep` replaces (the fixed-size ones stay). */
function replaced(set: BufferSet, keep: Keep): (GPUBuffer | null)[] {
  return [
    ...(keep.inputs ? [] : [set.inputs, set.staging]),
    ...(keep.output ? [] : [set.output, set.readback]),
    ...(keep.ties ? [] : [set.tieCounts]),
  ];
}

export class BufferSets {
  sets: BufferSet[] = [];
  poison: Uint8Array | null = null;
  private capacity: WindowCapacity = { inputBytes: 0, outputBytes: 0, tieBytes: 0 };

  constructor(private readonly options: BufferSetsOptions) {}

  /** The room each set has now (its parts' sizes). */
  get room(): WindowCapacity {
    return this.capacity;
  }

  /** Whether a window of `need` fits the sets as they are. */
  fits(need: WindowCapacity): boolean {
    const have = this.capacity;
    return (
      this.sets.length > 0 &&
      need.inputBytes <= have.inputBytes &&
      need.outputBytes <= have.outputBytes &&
      need.tieBytes <= have.tieBytes
    );
  }

  /**
   * Grows both sets when a tensor needs more room than the largest so far, once every window still
   * in them has been read back (the engine pipelines tensors: the last one may still be reading back).
   */
  async ensure(need: WindowCapacity): Promise<void> {
    if (this.fits(need)) return;
    // Calls that make jobs run one at a time (GpuEngine.serialized): nothing grows the sets meanwhile.
    await Promise.all(this.sets.map((s) => s.busy));
    const have = this.capacity;
    const grown: WindowCapacity = {
      inputBytes: Math.max(need.inputBytes, have.inputBytes),
      outputBytes: Math.max(need.outputBytes, have.outputBytes),
      tieBytes: Math.max(need.tieBytes, have.tieBytes),
    };
    // Each job's windows fit the budget, but the largest parts of two jobs with other dtypes may
    // not fit together: then the sets are made for this job alone.
    const capacity = windowMemory(grown) <= this.options.memoryBudget ? grown : need;
    // Only the parts whose size changes are made anew: a merge after the statistics (which have no
    // output) keeps their inputs, which the device would otherwise clear again.
    const keep: Keep = {
      inputs: this.sets.length > 0 && capacity.inputBytes === have.inputBytes,
      output: this.sets.length > 0 && capacity.outputBytes === have.outputBytes,
      ties: this.sets.length > 0 && capacity.tieBytes === have.tieBytes,
    };
    const old = this.sets;
    for (const set of old) for (const b of replaced(set, keep)) b?.destroy();
    this.capacity = capacity;
    this.sets = [0, 1].map((i) => this.create(i, capacity, keep, old[i]));
    if (this.options.poisonOutput) this.poison = new Uint8Array(capacity.outputBytes).fill(0xff);
  }

  /**
   * Gives `set` another inputs buffer (of the sets' input size and inputUsage()): the window cache
   * takes the one holding a window it keeps and hands back one it held. The set's io is a new object,
   * so that no bind group of the old buffer is used again.
   */
  swapInputs(set: BufferSet, inputs: GPUBuffer): void {
    set.inputs = inputs;
    set.io = { ...set.io, inputs };
  }

  /** The set's staging buffer, made (mapped) on first use, as large as its inputs. */
  staging(set: BufferSet): GPUBuffer {
    if (!set.staging) {
      set.staging = this.options.device.createBuffer({
        label: `MergeEngine.set${set.index}.staging`,
        size: set.inputs.size,
        usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC,
        mappedAtCreation: true,
      });
      set.stagingMapped = Promise.resolve();
    }
    return set.staging;
  }

  /** The set's memory for copied uploads, made on first use, as large as its inputs. */
  hostStaging(set: BufferSet): Uint8Array {
    set.hostStaging ??= new Uint8Array(set.inputs.size);
    return set.hostStaging;
  }

  destroy(): void {
    for (const set of this.sets)
      for (const b of [
        set.inputs,
        set.output,
        set.counters,
        set.norms,
        set.flags,
        set.tieCounts,
        set.params,
        set.readback,
      ])
        b.destroy();
    for (const set of this.sets) set.staging?.destroy();
    this.sets = [];
  }

  /**
   * Set `index` for capacity `c`: the buffers `keep` names, and those of a fixed size, taken from the
   * set it replaces (`old`), the rest made. It is a new object, so that nothing cached per set or per
   * io object (bind groups) outlives a buffer.
   */
  private create(index: number, c: WindowCapacity, keep: Keep, old: BufferSet | undefined): BufferSet {
    const { device, agents, agentBuffer, carry } = this.options;
    const counterBytes = statsLayout(agents).count * 4;
    const flagBytes = flagCount(agents) * 4;
    // A part of the old set where kept, else a new buffer of the part's name.
    const part = (name: BufferPart, kept: boolean, size: number, usage: GPUBufferUsageFlags): GPUBuffer =>
      old && kept ? old[name] : engineBuffer(device, `set${index}.${name}`, size, usage);
    const readWrite = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const normBytes = dareNormsBytes(agents);
    const inputs = part('inputs', keep.inputs, c.inputBytes, inputUsage());
    const output = part('output', keep.output, c.outputBytes, readWrite);
    const counters = part('counters', true, counterBytes, readWrite);
    const norms = part('norms', true, normBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    const flags = part('flags', true, flagBytes, readWrite);
    // Never empty, so that it can always be bound.
    const tieCounts = part(
      'tieCounts',
      keep.ties,
      Math.max(c.tieBytes, TIE_BLOCK_WORDS * 4),
      GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    );
    const params = part('params', true, PARAMS_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    const readback = part(
      'readback',
      keep.output,
      Math.max(c.outputBytes + pad4(flagBytes), counterBytes, normBytes),
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    // The inputs' staging (mapped, or host memory) is their size: kept with them.
    const staging = old && keep.inputs ? old.staging : null;
    return {
      index,
      inputs,
      output,
      counters,
      norms,
      flags,
      tieCounts,
      params,
      readback,
      staging,
      hostStaging: old && keep.inputs ? old.hostStaging : null,
      stagingMapped: staging && old ? old.stagingMapped : null,
      io: {
        params,
        inputs,
        output,
        counters,
        norms,
        flags,
        agents: agentBuffer,
        tie_counts: tieCounts,
        carry,
        tie_cutoffs: carry,
      },
      resident: null,
      busy: Promise.resolve(),
    };
  }
}

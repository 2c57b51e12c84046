// The engine worker's GPU: one device for every job (the CPU reference when there is none), what
// the engine card shows of it, and the memory a merge will hold.
import type { CompatReport } from '../format/compat.ts';
import type { Model } from '../format/model.ts';
import type { MergeEngine } from '../engine/contract.ts';
import { lowRankF32, type LowRankProduct } from '../methods/lora.ts';
import { createCpuEngine } from '../engine/cpu-engine.ts';
import {
  describeAdapter,
  requestEngineDevice,
  type EngineDevice,
  type EngineLimits,
} from '../engine/gpu/device.ts';
import { mergeableTensors } from '../driver/driver.ts';
import { readAheadShare } from '../driver/read-ahead.ts';
import { HASH_OFFLOAD_BYTES } from '../io/sha256-offload.ts';
import { createGpuEngine } from '../engine/gpu/gpu-engine.ts';
import { METHOD_LIST } from '../methods/registry/index.ts';
import { WarmPool } from './warm-pool.ts';
import {
  DEFAULT_MEMORY_BUDGET,
  DEFAULT_WINDOW_ELEMENTS,
  driverMemory,
  mergeSizes,
  type DriverMemory,
  tieRowsPerAgent,
  windowCapacity,
  windowElements,
  windowMemory,
} from '../engine/gpu/plumbing.ts';
import { MEMORY_BUDGETS, type EngineInfo, type MemoryEstimate } from './protocol.ts';
import { keptSlots } from '../engine/gpu/window-cache.ts';

let device: Promise<EngineDevice | { error: string }> | null = null;

export function acquireDevice(): Promise<EngineDevice | { error: string }> {
  device ??= (async () => {
    const gpu = (navigator as { gpu?: GPU }).gpu;
    if (!gpu) return { error: 'this browser offers no WebGPU inside a Web Worker' };
    try {
      return await requestEngineDevice(gpu, {
        // A lost device is requested afresh by the next job.
        onLost: () => {
          device = null;
        },
      });
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  })();
  return device;
}

export async function engineInfo(): Promise<EngineInfo> {
  const found = await acquireDevice();
  if ('error' in found)
    return { kind: 'cpu', description: 'CPU reference (no GPU)', limits: null, fallbackReason: found.error };
  return {
    kind: 'gpu',
    description: describeAdapter(found.adapterInfo),
    limits: found.limits,
    fallbackReason: null,
  };
}

/**
 * What the shard hashes' copies on their way to the hash worker hold at most (HashOffload: its limit
 * and its largest chunk, a window's output at most, which the limit covers): taken off the budget
 * the engine and the driver share, so that the studio holds DEFAULT_MEMORY_BUDGET in all.
 */
const HASHING_BYTES = 2 * HASH_OFFLOAD_BYTES;

/** The studio's memory budget, as the engine card sets it (setMemoryBudget). */
let studioBudget = DEFAULT_MEMORY_BUDGET;

/** Sets the studio's memory budget: one of MEMORY_BUDGETS. The next job's engine is made for it. */
export function setMemoryBudget(bytes: number): void {
  if (!MEMORY_BUDGETS.includes(bytes))
    throw new RangeError(`the memory budget must be one of ${MEMORY_BUDGETS.join(', ')} bytes, not ${bytes}`);
  studioBudget = bytes;
}

/** The studio's memory budget now (one of MEMORY_BUDGETS). */
export function memoryBudget(): number {
  return studioBudget;
}

/** The budget of the engine's windows and the driver's read-ahead and write-behind. */
function engineBudget(): number {
  return studioBudget - HASHING_BYTES;
}

/** How long an engine is kept after its job (WarmPool): a merge right after another, or after the statistics. */
const KEEP_WARM_MS = 60_000;

const warm = new WarmPool<MergeEngine>({ keepMs: KEEP_WARM_MS });

/**
 * Runs a job with an engine for `agents` agents on the worker's device: the one the last job used
 * where it is still kept (`warm`), else a new one.
 */
export async function withEngine<T>(
  agents: number,
  run: (engine: MergeEngine, warm: boolean) => Promise<T>,
): Promise<T> {
  const found = await acquireDevice();
  // A lost device gives the next job a new one, and so an engine of its own.
  const key = ['error' in found ? null : found.device, agents, studioBudget];
  return warm.use(
    key,
    async () => {
      if ('error' in found) return createCpuEngine({ agents });
      // Copied uploads: a mapping in Chromium is shared memory the GPU process copies out of again.
      return createGpuEngine(found.device, {
        agents,
        adapterDescription: describeAdapter(found.adapterInfo),
        uploads: 'copied',
        memoryBudget: engineBudget(),
      });
    },
    async (engine, warm) => {
      active.add(engine);
      try {
        return await run(engine, warm);
      } finally {
        active.delete(engine);
      }
    },
  );
}

/** Engines of the jobs running now: their low-rank product serves LoRA agents' reads meanwhile. */
const active = new Set<MergeEngine>();

/**
 * The low-rank product LoRA agents compute τ with (driver/adapter-model.ts): a running job's engine's
 * (the GPU kernel), else the CPU's, as the CLI's agents take its engine's once made.
 */
export function currentProduct(): LowRankProduct {
  for (const engine of active) if (engine.product) return engine.product;
  return lowRankF32;
}

/** Lets the kept engine go now: its buffers are freed (benchmarks measure idle memory without it). */
export function releaseEngine(): void {
  warm.release();
}

/** WebGPU's default maxStorageBufferBindingSize, for the estimate without a device. */
const SPEC_BINDING = 128 << 20;

/**
 * The most the driver holds for these models (driverMemory): its read-ahead share of every model, or
 * the largest tensor where that is smaller, and the write-behind, or the whole output where smaller;
 * with the shard hashes' copies (HASHING_BYTES, or the whole output where smaller).
 */
function driverBytes(share: DriverMemory, agents: number, largestBytes: number, outputBytes: number): number {
  const each = readAheadShare(share.readAhead, agents + 1);
  const hashing = Math.min(HASHING_BYTES, outputBytes);
  return (agents + 1) * Math.min(each, largestBytes) + Math.min(share.writeBehind, outputBytes) + hashing;
}

/** What a merge of these models will hold: its window buffers, sized as the GPU engine sizes them. */
export function estimateMemory(
  base: Model,
  report: Omit<CompatReport, 'issues'>,
  agents: number,
  limits: EngineLimits | null,
): MemoryEstimate {
  const tensors = report.ok ? mergeableTensors(base, report) : [];
  const outputBytes = tensors.reduce((sum, t) => sum + t.end - t.begin, 0);
  const inputBytes = outputBytes * (agents + 1);
  const { numels, largest, widestBytes: widest } = mergeSizes(tensors);
  // The engine sizes windows as here; the widest dtype in and out gives the largest buffers, and
  // (the method not chosen yet) the method that ranks the most ties the largest tie counts.
  const tieRows = Math.max(...METHOD_LIST.map((d) => tieRowsPerAgent(d.plan)));
  const budget = engineBudget();
  const driver = driverMemory(budget, agents, DEFAULT_WINDOW_ELEMENTS);
  const window =
    tensors.length === 0
      ? 0
      : Math.min(
          largest,
          windowElements({
            agents,
            inBytes: widest,
            outBytes: widest,
            tieRows,
            maxStorageBufferBindingSize: limits?.maxStorageBufferBindingSize ?? SPEC_BINDING,
            maxBufferSize: limits?.maxBufferSize ?? SPEC_BINDING,
            maxComputeWorkgroupsPerDimension: limits?.maxComputeWorkgroupsPerDimension ?? 65535,
            maxWindowElements: DEFAULT_WINDOW_ELEMENTS,
            memoryBudget: budget,
          }),
        );
  const capacity = windowCapacity(window, agents, widest, widest, tieRows);
  const gpuBytes = windowMemory(capacity);
  const keptWindows = keptSlots(budget, capacity, driver);
  // The two buffer sets hold two windows of a tensor; the cache, the rest where it has room.
  const windowsOf = (numel: number): number => (window > 0 ? Math.ceil(numel / window) : 0);
  const largestWindows = windowsOf(largest);
  const short = Math.max(0, largestWindows - 2 - keptWindows);
  return {
    mergedTensors: tensors.length,
    inputBytes,
    outputBytes,
    windowElements: window,
    gpuBytes,
    driverBytes: driverBytes(driver, agents, largest * widest, outputBytes),
    budgetBytes: studioBudget,
    keptWindows,
    keptBytes: keptWindows * capacity.inputBytes,
    largestWindows,
    rereadTensors: numels.filter((numel) => windowsOf(numel) > 2 + keptWindows).length,
    readOnceBudget: studioBudget + short * capacity.inputBytes,
  };
}

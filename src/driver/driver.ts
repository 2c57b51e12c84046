// The model-level driver: checks the models, runs the statistics pass when the method needs it,
// then streams every tensor through the engine (or copies it raw) into safetensors shards, writes
// the Hugging Face folder around them, and re-reads what it wrote. Platform-free: it sees models
// through ByteSources and writes through a FolderSink.
import { checkCompatibility, type CompatReport } from '../format/compat.ts';
import { dtypeBits, isMergeableDtype, type FloatDtype } from '../format/dtype.ts';
import type { Model, ModelTensor } from '../format/model.ts';
import { numel, readSafetensorsHeader } from '../format/safetensors.ts';
import { indexJson, planShards, type ShardPlan } from '../format/sharded.ts';
import { layoutSafetensors, SafetensorsStreamWriter, type TensorSpec } from '../format/write.ts';
import { ChunkPool, writeBehind, type FolderSink } from '../io/sink.ts';
import { ramLambdas, sumStats } from '../methods/stats.ts';
import { toMergekitYaml } from '../methods/recipe.ts';
import { methodOf } from '../methods/registry/index.ts';
import { copyCompanion, isCompanionFile, modelCard, recipeOf, writeText } from './model-card.ts';
import { paramsForTensor } from '../methods/resolve.ts';
import type { MethodParams } from '../methods/types.ts';
import { Sha256 } from '../io/sha256.ts';
import type { StreamHash } from '../io/sha256-offload.ts';
import { nonFiniteCause, type NonFiniteError } from '../methods/errors.ts';
import { emptyBranchCounts, type TensorInput, type TensorStats } from '../methods/tensors.ts';
import { BRANCHES_FILE, keptBranches, mergeBranches, type MergeBranches } from './merge-branches.ts';
import { ReadAhead, type TensorBytes, type TensorReaders } from './read-ahead.ts';
import { readAt, RoundedToInf, roundedTensors, tensorDtypes } from './read-precision.ts';
import type { ReadDtype } from '../format/precision.ts';
import { must } from '../io/checked.ts';
import { isAbortError, throwIfAborted } from '../io/abort.ts';
import { changedF64Tensors } from './f64-check.ts';
import {
  CompatibilityError,
  MergeError,
  type AnalysisResult,
  type MergeJob,
  type MergeResult,
  type ModelsInput,
  type Progress,
  type Stage,
  type WrittenFile,
} from './job.ts';

export { TOOL_NAME, TOOL_VERSION, isCompanionFile } from './model-card.ts';
import { DEFAULT_SHARD_BYTES } from './shard-sizes.ts';
export { BROWSER_SHARD_BYTES, DEFAULT_SHARD_BYTES } from './shard-sizes.ts';

/** The tensors that get merged: in every model with one shape and dtype, of a float dtype. */
export function mergeableTensors(base: Model, report: Omit<CompatReport, 'issues'>): ModelTensor[] {
  return report.common
    .map((name) => base.tensors.get(name))
    .filter((tensor): tensor is ModelTensor => tensor !== undefined && isMergeableDtype(tensor.dtype));
}

function elementBytes(dtype: FloatDtype): number {
  return dtypeBits(dtype) / 8;
}

/** Where tensor `name`'s bytes lie in each model (0 = base, t + 1 = agent t). */
function tensorBytes(models: readonly Model[], name: string): TensorBytes[] {
  return models.map((model) => {
    const tensor = model.tensors.get(name);
    if (!tensor) throw new MergeError(`${model.name} has no tensor ${name}`, name);
    return { source: model.source(tensor.file), offset: tensor.offset, length: tensor.end - tensor.begin };
  });
}

/**
 * The engine's view of tensor `name`: its reads go through `readers` (a ReadAhead's) where given, each
 * model's values at the read precision (`readDtype`, read-precision.ts); `rounded` hears of a model
 * whose finite values became ±Inf there.
 */
export function tensorInput(
  models: readonly Model[],
  name: string,
  readers?: TensorReaders,
  precision: { readDtype?: ReadDtype; rounded?: RoundedToInf } = {},
): TensorInput {
  const parts = tensorBytes(models, name);
  const first = must(models[0]?.tensors.get(name), `tensor ${name} of the base`);
  const { stored, read: dtype } = tensorDtypes(models, name, precision.readDtype);
  const part = (index: number): TensorBytes => {
    const found = parts[index];
    if (!found) throw new MergeError(`input ${index} out of range for ${name}`, name);
    return found;
  };
  return {
    name,
    numel: numel(first.shape),
    dtype,
    shape: first.shape,
    async read(index, start, count, into) {
      const { source, offset } = part(index);
      const from = must(stored[index], `input ${index} of ${name}`);
      const at = start * elementBytes(from);
      const overflow = await readAt(from, dtype, count, into, async (piece, bytes, target) => {
        if (readers) await readers.read(index, at + piece, bytes, target);
        else await source.read(offset + at + piece, bytes, target);
      });
      if (overflow > 0) precision.rounded?.add(name, index, dtype);
    },
  };
}

/**
 * A ReadAhead over `order`, the merged tensors in the order the engine is given them, with the
 * engine's share of the memory budget for it (none where the engine names none).
 */
function readAheadOf(
  models: readonly Model[],
  job: Pick<ModelsInput, 'engine' | 'overlap' | 'readDtype'>,
  order: readonly string[],
): { ahead: ReadAhead; input: (name: string) => TensorInput; rounded: RoundedToInf } {
  const budget = job.overlap === false ? 0 : (job.engine.driverMemory?.readAhead ?? 0);
  const ahead = new ReadAhead((name) => tensorBytes(models, name), budget);
  const next = new Map(order.map((name, i) => [name, order[i + 1]]));
  const rounded = new RoundedToInf();
  const precision = { readDtype: job.readDtype, rounded };
  return {
    ahead,
    rounded,
    input: (name) => tensorInput(models, name, ahead.reader(name, next.get(name)), precision),
  };
}

function noop(): void {}

/**
 * Tensors through an engine that may pipeline them (MergeOptions.onSubmitted): once tensor i says
 * its work is submitted, tensor i + 1 starts while i reads back and emits. At most two are in flight:
 * add() returns once the new one is submitted and the one before it has finished. Where disabled,
 * or the engine never says, each tensor finishes before the next starts.
 */
class TensorPipeline {
  private readonly inner = new AbortController();
  private readonly cancel = (): void => this.inner.abort();
  private readonly running = new Set<Promise<void>>();
  private last: Promise<void> | null = null;

  constructor(
    private readonly enabled: boolean,
    private readonly signal: AbortSignal | undefined,
  ) {
    if (signal?.aborted) this.inner.abort();
    signal?.addEventListener('abort', this.cancel);
  }

  /**
   * Starts one tensor's work: `start` gets the signal to pass on (the caller's, or stop()'s) and the
   * onSubmitted to pass on (undefined where disabled).
   */
  async add(
    start: (signal: AbortSignal, onSubmitted: (() => void) | undefined) => Promise<void>,
  ): Promise<void> {
    let submitted = noop;
    const started = new Promise<void>((resolve) => (submitted = resolve));
    const work = start(this.inner.signal, this.enabled ? submitted : undefined);
    // Held here until awaited: its failure is thrown there, never unhandled.
    this.running.add(work);
    const done = (): void => void this.running.delete(work);
    work.then(done, done);
    await Promise.race([started, work]);
    await this.finishLast();
    this.last = work;
  }

  /** Waits for the last tensor added to finish (its emits done); throws its failure. */
  async finishLast(): Promise<void> {
    const last = this.last;
    this.last = null;
    await last;
  }

  /** After a failure: stops the work still running and waits for it to end. */
  async stop(): Promise<void> {
    this.inner.abort();
    await Promise.allSettled(this.running);
  }

  dispose(): void {
    this.signal?.removeEventListener('abort', this.cancel);
  }
}

class ProgressMeter {
  private readonly started = Date.now();
  private lastEmit = 0;
  bytesDone = 0;
  tensorsDone = 0;

  constructor(
    private readonly stage: Stage,
    private readonly tensorsTotal: number,
    private readonly bytesTotal: number,
    private readonly sink?: (progress: Progress) => void,
  ) {}

  report(currentTensor: string | undefined, force = false): void {
    if (!this.sink) return;
    const now = Date.now();
    // Throttled: a progress event per window would flood a UI thread or a terminal.
    if (!force && now - this.lastEmit < 100) return;
    this.lastEmit = now;
    const elapsedMs = now - this.started;
    const bytesPerSecond = elapsedMs > 0 ? (this.bytesDone / elapsedMs) * 1000 : 0;
    const left = Math.max(0, this.bytesTotal - this.bytesDone);
    this.sink({
      stage: this.stage,
      tensorsDone: this.tensorsDone,
      tensorsTotal: this.tensorsTotal,
      bytesDone: Math.min(this.bytesDone, this.bytesTotal),
      bytesTotal: this.bytesTotal,
      currentTensor,
      elapsedMs,
      bytesPerSecond,
      etaMs: bytesPerSecond > 0 ? (left / bytesPerSecond) * 1000 : undefined,
    });
  }
}

function compatible(base: Model, agents: Model[]): CompatReport {
  const report = checkCompatibility(base, agents);
  if (!report.ok) throw new CompatibilityError(report);
  return report;
}

/** The statistics pass: exact per-tensor counts for every merged tensor, and their totals. */
export async function analyzeModels(
  input: ModelsInput & { epsilon: number; only?: ReadonlySet<string> },
): Promise<AnalysisResult> {
  const { base, agents, engine, signal, epsilon, only } = input;
  const tensors = mergeableTensors(base, compatible(base, agents)).filter((t) => !only || only.has(t.name));
  const models = [base, ...agents];
  const totalBytes = tensors.reduce((sum, t) => sum + (t.end - t.begin) * models.length, 0);
  const meter = new ProgressMeter('analyze', tensors.length, totalBytes, input.onProgress);
  const stats: TensorStats[] = [];
  const reads = readAheadOf(
    models,
    input,
    tensors.map((t) => t.name),
  );
  const pipeline = new TensorPipeline(input.overlap !== false, signal);
  try {
    for (const [i, tensor] of tensors.entries()) {
      throwIfAborted(signal);
      meter.report(tensor.name);
      await pipeline.add((signal, onSubmitted) =>
        withTensorName(tensor.name, () =>
          engine.analyze(reads.input(tensor.name), epsilon, signal, onSubmitted),
        ).then((s) => {
          stats[i] = s;
          meter.bytesDone += (tensor.end - tensor.begin) * models.length;
          meter.tensorsDone += 1;
        }),
      );
    }
    await pipeline.finishLast();
  } catch (error) {
    await pipeline.stop();
    throw error;
  } finally {
    pipeline.dispose();
    await reads.ahead.settled();
  }
  meter.report(undefined, true);
  return { epsilon, tensors: stats, totals: sumStats(stats, agents.length) };
}

async function withTensorName<T>(
  name: string,
  run: () => Promise<T>,
  labels?: string[],
  rounded?: RoundedToInf,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (isAbortError(error) || error instanceof MergeError) throw error;
    const bad = nonFiniteCause(error);
    if (bad && labels)
      throw new MergeError(
        nonFiniteMessage(name, bad, labels) + (rounded?.describe(name, labels) ?? ''),
        name,
        {
          cause: error,
        },
      );
    throw new MergeError(`${name}: ${(error as Error).message}`, name, { cause: error });
  }
}

/** Names the tensor, the models that hold NaN or ±Inf and how many elements (labels: base first). */
export function nonFiniteMessage(tensor: string, error: NonFiniteError, labels: readonly string[]): string {
  const holders = error.perModel
    .map((count, m) => (count > 0 ? `${m === 0 ? 'base' : 'agent'} ${labels[m]} (${count})` : ''))
    .filter(Boolean);
  const what =
    error.nonFinite > 0
      ? `${error.nonFinite} element${error.nonFinite === 1 ? '' : 's'} where the models differ and ` +
        `${holders.join(', ')} hold${holders.length === 1 ? 's' : ''} NaN or ±Inf`
      : `${error.overflow} merged value${error.overflow === 1 ? '' : 's'} overflow to ±Inf in the output dtype`;
  return (
    `cannot merge tensor ${tensor}: ${what}. Nothing was written: a NaN or Inf in a merged model ` +
    `cannot be noticed later (fix the input, or pick another method, weights or --dtype).`
  );
}

function dominantDtype(tensors: ModelTensor[]): FloatDtype | undefined {
  const bytes = new Map<FloatDtype, number>();
  for (const t of tensors)
    bytes.set(t.dtype as FloatDtype, (bytes.get(t.dtype as FloatDtype) ?? 0) + t.end - t.begin);
  let best: FloatDtype | undefined;
  for (const [dtype, size] of bytes) if (!best || size > (bytes.get(best) ?? 0)) best = dtype;
  return best;
}

const TORCH_DTYPE: Record<FloatDtype, string> = { BF16: 'bfloat16', F16: 'float16', F32: 'float32' };

/** What a merge will write: the merged tensors, every output tensor's spec and the shard plan. */
export function planOutput(
  base: Model,
  agents: Model[],
  outDtype?: FloatDtype,
  shardBytes?: number,
): { merged: ModelTensor[]; mergedNames: Set<string>; specs: TensorSpec[]; plan: ShardPlan } {
  const merged = mergeableTensors(base, compatible(base, agents));
  const mergedNames = new Set(merged.map((t) => t.name));
  const specs: TensorSpec[] = [...base.tensors.values()].map((tensor) =>
    mergedNames.has(tensor.name)
      ? { name: tensor.name, dtype: outDtype ?? (tensor.dtype as FloatDtype), shape: tensor.shape }
      : tensor,
  );
  return { merged, mergedNames, specs, plan: planShards(specs, shardBytes ?? DEFAULT_SHARD_BYTES) };
}

/**
 * Bytes the output folder will take, for a free-space check before the work: the tensors, the base's
 * companion files, and a margin for headers, the index, the model card and the recipe.
 */
export function predictOutputBytes(
  base: Model,
  agents: Model[],
  outDtype?: FloatDtype,
  shardBytes?: number,
): number {
  const { plan } = planOutput(base, agents, outDtype, shardBytes);
  const companions = base.files
    .filter((f) => isCompanionFile(f.name) || f.name === 'config.json')
    .reduce((sum, f) => sum + f.source.size, 0);
  const headers = plan.shards.reduce((sum, shard) => sum + 8 + 200 * (shard.tensors.length + 1), 0);
  return plan.totalSize + companions + headers + (1 << 20);
}

export async function mergeModels(job: MergeJob): Promise<MergeResult> {
  const { base, agents, engine, params, signal, out } = job;
  if (agents.length !== engine.agents)
    throw new MergeError(`the engine was made for ${engine.agents} agents, not ${agents.length}`);
  const f64 = await changedF64Tensors(base, agents, signal);
  if (f64.length > 0)
    throw new MergeError(
      `${f64.length} F64 tensor${f64.length === 1 ? '' : 's'} changed by an agent, which this tool does not ` +
        `merge (it merges BF16, F16 and F32) and would copy from the base, dropping the change: ` +
        `${f64.slice(0, 5).join(', ')}${f64.length > 5 ? ` and ${f64.length - 5} more` : ''}. ` +
        'Store them as F32 in every model to merge them.',
      f64[0],
    );
  const { merged, mergedNames, specs, plan } = planOutput(base, agents, job.outDtype, job.shardBytes);
  const models = [base, ...agents];

  // λ from the whole model's statistics need them before the first merged value.
  const { plan: methodPlan } = methodOf(params.method);
  const globalStats = methodPlan.lambdas === 'global';
  // A sparsifying merge counts what it kept; the others' branches are the statistics'.
  const kept = methodPlan.sparsify !== undefined ? emptyBranchCounts(agents.length) : undefined;
  let analysis = job.analysis;
  if (!analysis && globalStats) analysis = await analyzeModels({ ...job, epsilon: params.epsilon });
  const lambdas =
    globalStats && analysis
      ? ramLambdas(analysis.totals, params.method, params.r, params.alpha)
      : agents.map(() => 1);
  const tensorLambdas = methodPlan.lambdas === 'tensor' ? new Map<string, readonly number[]>() : undefined;

  const outputBytes = plan.totalSize;
  const copiedBytes = specs
    .filter((s) => !mergedNames.has(s.name))
    .reduce((sum, s) => sum + base.tensors.get(s.name)!.end - base.tensors.get(s.name)!.begin, 0);
  const inputBytes = merged.reduce((sum, t) => sum + (t.end - t.begin) * models.length, 0) + copiedBytes;
  const meter = new ProgressMeter('merge', specs.length, inputBytes, job.onProgress);
  const written: WrittenFile[] = [];
  const warnings: string[] = [];
  const outDtype = job.outDtype ?? dominantDtype(merged);
  const used = new Map<string, MethodParams>();
  let branches: MergeBranches | null;
  let reads: ReturnType<typeof readAheadOf> | undefined;

  try {
    // Companion files first: a folder whose weights (or index) are missing never looks complete.
    if (base.configText !== undefined && base.config) {
      const config = { ...base.config };
      if (outDtype) config.torch_dtype = TORCH_DTYPE[outDtype];
      await writeText(out, 'config.json', `${JSON.stringify(config, null, 2)}\n`, written);
    }
    for (const file of base.files
      .map((f) => f.name)
      .filter(isCompanionFile)
      .sort()) {
      const warning = await copyCompanion(out, base, file, written);
      if (warning) warnings.push(warning);
    }
    await writeText(out, 'mergekit_config.yml', toMergekitYaml(recipeOf(job, outDtype)), written);

    const shardFiles: WrittenFile[] = [];
    const layouts = plan.shards.map((shard) => layoutSafetensors(shard.tensors, { format: 'pt' }));
    // Output waits for the file system only beyond this many bytes queued, copied into memory reused
    // across the shards (an engine's emitted bytes are only lent).
    const behind = job.overlap === false ? 0 : (engine.driverMemory?.writeBehind ?? 0);
    const queueMemory = new ChunkPool(behind);
    reads = readAheadOf(
      models,
      job,
      layouts.flatMap((l) => l.tensors.map((t) => t.name).filter((name) => mergedNames.has(name))),
    );
    // Tensors are pipelined where the engine can: tensor i + 1 starts while i reads back and emits.
    const pipeline = new TensorPipeline(job.overlap !== false, signal);
    // Input bytes of the tensors before this one, for progress, whether or not they have finished.
    let bytesBefore = 0;
    try {
      for (const [s, shard] of plan.shards.entries()) {
        const layout = must(layouts[s], `layout of ${shard.file}`);
        const hash: StreamHash = job.shardHash?.() ?? new Sha256();
        const raw = writeBehind(await out.create(shard.file), behind, queueMemory);
        const sink = {
          write: async (chunk: Uint8Array) => {
            await hash.update(chunk);
            await raw.write(chunk);
          },
          close: () => raw.close(),
          abort: () => {
            hash.drop?.();
            return raw.abort();
          },
        };
        const writer = new SafetensorsStreamWriter(sink, layout, shard.file);
        try {
          for (const spec of layout.tensors) {
            throwIfAborted(signal);
            meter.report(spec.name);
            const source = base.tensors.get(spec.name)!;
            const emit = (bytes: Uint8Array) => writer.writeTensorBytes(spec.name, bytes);
            if (!mergedNames.has(spec.name)) {
              await pipeline.finishLast();
              await copyTensorBytes(base, source, emit, signal);
              bytesBefore += source.end - source.begin;
              meter.bytesDone = bytesBefore;
              meter.tensorsDone += 1;
              continue;
            }
            const before = bytesBefore;
            const size = (source.end - source.begin) * models.length;
            bytesBefore += size;
            const tensorParams = paramsForTensor(params, job.perTensor, spec.name);
            used.set(spec.name, tensorParams);
            await pipeline.add((signal, onSubmitted) =>
              withTensorName(
                spec.name,
                () =>
                  engine.merge(must(reads, 'read-ahead').input(spec.name), {
                    params: tensorParams,
                    lambdas,
                    outDtype: spec.dtype as FloatDtype,
                    signal,
                    emit,
                    branches: kept,
                    ...(tensorLambdas && {
                      onTensorLambdas: (l: readonly number[]) => tensorLambdas.set(spec.name, [...l]),
                    }),
                    onProgress: (done) => {
                      meter.bytesDone = Math.max(meter.bytesDone, before + done);
                      meter.report(spec.name);
                    },
                    ...(onSubmitted ? { onSubmitted } : {}),
                  }),
                [job.baseLabel, ...job.agentLabels],
                reads?.rounded,
              ).then(() => {
                meter.bytesDone = Math.max(meter.bytesDone, before + size);
                meter.tensorsDone += 1;
              }),
            );
          }
          await pipeline.finishLast();
          await writer.close();
        } catch (error) {
          // The merges still running stop, and end before their shard's writer does.
          await pipeline.stop();
          await writer.abort();
          throw error;
        }
        const entry = { file: shard.file, bytes: layout.fileSize, sha256: await hash.hex() };
        written.push(entry);
        shardFiles.push(entry);
      }
    } finally {
      pipeline.dispose();
    }
    meter.report(undefined, true);
    await verifyShards(
      out,
      plan.shards.map((s) => ({ file: s.file, tensors: s.tensors })),
    );
    if (plan.shards.length > 1)
      await writeText(out, 'model.safetensors.index.json', indexJson(plan), written);
    const inputFiles = await job.inputFiles?.();
    await writeText(
      out,
      'README.md',
      modelCard({
        job,
        inputFiles,
        lambdas,
        ...(tensorLambdas && { tensorLambdas }),
        analysis,
        outDtype,
        shards: shardFiles,
        merged: merged.length,
        copied: specs.length - merged.length,
        used,
        rounded: roundedTensors(
          models,
          merged.map((t) => t.name),
          job.readDtype,
        ).length,
      }),
      written,
    );
    branches = kept
      ? keptBranches(params.epsilon, job.agentLabels, kept)
      : analysis
        ? mergeBranches(analysis.epsilon, job.agentLabels, analysis.totals)
        : null;
    // After the card: a folder without it is still a complete model, its branches just unknown.
    if (branches) await writeText(out, BRANCHES_FILE, `${JSON.stringify(branches, null, 2)}\n`, written);
  } catch (error) {
    // Nothing half-written may stay behind looking like a model, nor a read still running.
    await reads?.ahead.settled();
    for (const file of written) await out.remove(file.file).catch(() => undefined);
    throw error;
  }
  return {
    files: written,
    lambdas,
    ...(tensorLambdas && { tensorLambdas }),
    analysis,
    branches,
    mergedTensors: merged.length,
    readAheadTensors: reads?.ahead.hits ?? 0,
    copiedTensors: specs.length - merged.length,
    outputBytes,
    warnings,
  };
}

async function copyTensorBytes(
  model: Model,
  tensor: ModelTensor,
  emit: (bytes: Uint8Array) => Promise<void>,
  signal: AbortSignal | undefined,
): Promise<void> {
  const source = model.source(tensor.file);
  const total = tensor.end - tensor.begin;
  const chunk = 16 << 20;
  for (let done = 0; done < total; done += chunk) {
    throwIfAborted(signal);
    await emit(await source.read(tensor.offset + done, Math.min(chunk, total - done)));
  }
}

/** Re-reads every written shard header and checks it holds exactly the planned tensors. */
export async function verifyShards(
  out: FolderSink,
  shards: { file: string; tensors: TensorSpec[] }[],
): Promise<void> {
  for (const shard of shards) {
    const header = await readSafetensorsHeader(await out.open(shard.file));
    const want = new Map(shard.tensors.map((t) => [t.name, t]));
    if (header.tensors.length !== want.size)
      throw new MergeError(
        `${shard.file}: re-read found ${header.tensors.length} tensors, wrote ${want.size}`,
      );
    for (const tensor of header.tensors) {
      const spec = want.get(tensor.name);
      if (!spec || spec.dtype !== tensor.dtype || spec.shape.join(',') !== tensor.shape.join(','))
        throw new MergeError(
          `${shard.file}: re-read tensor ${tensor.name} does not match what was written`,
          tensor.name,
        );
    }
  }
}

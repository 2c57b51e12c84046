// The statistics as JSON, in the one schema that `merge-studio analyze --json` writes and the
// studio exports: other tools read it, so both sides build it here.
import type { Model } from '../format/model.ts';
import { MAGNITUDE_BINS, ramLambdas, type ModelStats } from '../methods/stats.ts';
import type { MethodName } from '../methods/types.ts';
import { methodOf } from '../methods/registry/index.ts';
import type { AnalysisResult, StatsFile } from './job.ts';
import type { PrecisionSummary } from './precision-stats.ts';

export type { StatsFile };
import { Sha256 } from '../io/sha256.ts';

/** The identity of every weights file of the models (base first), from their headers alone. */
export async function statsFiles(models: readonly Model[]): Promise<StatsFile[]> {
  const files: StatsFile[] = [];
  for (const [m, model] of models.entries()) {
    // By name, so the list does not depend on the order a folder or a browser listed the files.
    const sorted = [...model.files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const f of sorted) {
      if (!f.name.endsWith('.safetensors')) continue;
      const size = await f.source.read(0, Math.min(8, f.source.size));
      const headerBytes =
        size.length === 8 ? Number(new DataView(size.buffer, size.byteOffset).getBigUint64(0, true)) : 0;
      const hash = new Sha256();
      hash.update(await f.source.read(0, Math.min(f.source.size, 8 + headerBytes)));
      files.push({ model: m, file: f.name, bytes: f.source.size, headerSha256: hash.hex() });
    }
  }
  return files;
}

/** The λ a merge actually applied, to report instead of the RAM+ preview. */
export interface AppliedLambdas {
  method: MethodName;
  /** Per agent; ignored where the method's λ differs per tensor (`ramplus_tl`: written as null). */
  lambdas: readonly number[];
}

/** ρ = +∞ (shared changes, none unique) is written as the string "Infinity": JSON has no infinity. */
function rhoJson(rho: number): number | string {
  return Number.isFinite(rho) ? rho : 'Infinity';
}

/**
 * Without `applied` each model's λ is the RAM+ preview from (r, α) and `lambdaMethod` says
 * "ramplus"; with it, the λ the merge used and its method.
 */
export function statsJson(
  analysis: AnalysisResult,
  paths: string[],
  r: number,
  alpha: number,
  applied?: AppliedLambdas,
  files?: readonly StatsFile[],
  precision?: PrecisionSummary,
): unknown {
  const totals = analysis.totals;
  const lambdas: (number | null)[] = applied
    ? methodOf(applied.method).plan.lambdas === 'tensor'
      ? paths.map(() => null)
      : [...applied.lambdas]
    : ramLambdas(totals, 'ramplus', r, alpha);
  return {
    epsilon: analysis.epsilon,
    ...(precision
      ? {
          readDtype: precision.readDtype,
          precision: {
            roundedTensors: precision.roundedTensors,
            numel: precision.numel,
            ...(precision.changedBf16 ? { changedBf16: precision.changedBf16 } : {}),
            lines: precision.lines,
          },
        }
      : {}),
    lambdaMethod: applied?.method ?? 'ramplus',
    nonFinite: totals.nonFinite,
    base: { nonFinite: totals.nonFiniteModels[0] ?? 0 },
    models: paths.map((path, t) => ({
      path,
      changed: totals.changed[t],
      ...(precision ? { changedStored: precision.changedStored[t] } : {}),
      unique: totals.unique[t],
      shared: totals.shared[t],
      overlap: totals.overlap[t],
      rho: rhoJson(totals.rho[t]!),
      lambda: lambdas[t],
      nonFinite: totals.nonFiniteModels[t + 1] ?? 0,
      magnitude: totals.magnitude[t],
      oneUlp: totals.oneUlp[t],
    })),
    ...(files ? { files } : {}),
    tensors: analysis.tensors.map((t) => ({
      name: t.name,
      dtype: t.dtype,
      numel: t.numel,
      counts: t.counts,
      changed: t.changed,
      unique: t.unique,
      signConflicts: t.signConflicts,
      nonFinite: t.nonFinite,
      nonFiniteModels: t.nonFiniteModels,
    })),
  };
}

interface StatsJsonIn {
  epsilon?: unknown;
  readDtype?: unknown;
  nonFinite?: unknown;
  base?: { nonFinite?: unknown };
  files?: StatsFile[];
  models?: {
    changed: number;
    unique: number;
    shared: number;
    overlap: number[];
    rho: number | string;
    nonFinite: number;
    magnitude?: number[];
    oneUlp?: number;
  }[];
  tensors?: { numel: number; counts: number[]; signConflicts: number }[];
}

/**
 * Where one model's counts contradict each other (an edited file): shared = changed − unique, the
 * overlaps sum to changed, and ρ is what the counts give (SPEC.md: shared / unique, ∞ without unique
 * elements, 0 without changes). The merge's λ would trust ρ alone.
 */
function inconsistency(m: NonNullable<StatsJsonIn['models']>[number]): string | undefined {
  const { changed, unique, shared } = m;
  if (![changed, unique, shared].every((x) => Number.isInteger(x) && x >= 0))
    return `changed, unique and shared must be counts, got ${changed}, ${unique}, ${shared}`;
  if (shared !== changed - unique) return `shared ${shared} is not changed ${changed} − unique ${unique}`;
  const overlaps = m.overlap.reduce((a, b) => a + b, 0);
  if (overlaps !== changed) return `its overlaps sum to ${overlaps}, not to changed ${changed}`;
  const rho = changed === 0 ? 0 : unique === 0 ? Infinity : shared / unique;
  const given = m.rho === 'Infinity' ? Infinity : Number(m.rho);
  if (given !== rho)
    return `rho ${String(m.rho)} contradicts its counts (shared ${shared} / unique ${unique} = ${rhoJson(rho)})`;
  return undefined;
}

/**
 * The model totals of a statistics JSON, after checking that it was written by `analyze` for exactly
 * these files (`current`, from statsFiles) at this ε. The per-tensor rows stay in the file: a merge
 * needs only the totals (λ and the model card). `path` names the JSON in errors.
 */
export function totalsFromStatsJson(
  text: string,
  path: string,
  current: readonly StatsFile[],
  epsilon: number,
  sameRead: (gathered: string) => boolean = (gathered) => gathered === 'default',
): AnalysisResult {
  let json: StatsJsonIn;
  try {
    json = JSON.parse(text) as StatsJsonIn;
  } catch (error) {
    throw new Error(`${path}: not JSON (${(error as Error).message})`, { cause: error });
  }
  const { files, models, tensors } = json;
  if (!Array.isArray(files))
    throw new Error(`${path}: no "files" identities; write it again with merge-studio analyze --json`);
  if (!Array.isArray(models) || !Array.isArray(tensors) || models.some((m) => !Array.isArray(m.magnitude)))
    throw new Error(`${path}: not a statistics JSON of merge-studio analyze`);
  if (json.epsilon !== epsilon)
    throw new Error(`${path}: gathered at ε = ${String(json.epsilon)}, the merge uses ε = ${epsilon}`);
  // Files written before read precisions existed read every model as stored: the default.
  const gathered = typeof json.readDtype === 'string' ? json.readDtype : 'default';
  if (!sameRead(gathered))
    throw new Error(
      `${path}: gathered at read precision ${gathered}, which reads these models otherwise than the merge: ` +
        'analyze again with the merge’s --read-dtype',
    );
  const agents = current.reduce((n, f) => Math.max(n, f.model), 0);
  if (models.length !== agents)
    throw new Error(`${path}: statistics of ${models.length} agents, the merge has ${agents}`);
  const label = (f: StatsFile): string => `${f.model === 0 ? 'base' : `agent ${f.model}`} file ${f.file}`;
  for (const f of current) {
    const was = files.find((g) => g.model === f.model && g.file === f.file);
    if (!was) throw new Error(`${path}: has no statistics of the ${label(f)}`);
    if (was.bytes !== f.bytes)
      throw new Error(
        `${path}: the ${label(f)} is ${f.bytes} bytes, the statistics are of ${was.bytes} bytes`,
      );
    if (was.headerSha256 !== f.headerSha256)
      throw new Error(
        `${path}: the ${label(f)} has another header than the one the statistics were gathered from`,
      );
  }
  if (files.length !== current.length)
    throw new Error(`${path}: statistics of ${files.length} files, the merge reads ${current.length}`);
  models.forEach((m, t) => {
    const problem = inconsistency(m);
    if (problem)
      throw new Error(`${path}: agent ${t + 1}: ${problem}; write it again with merge-studio analyze --json`);
  });
  const counts = new Array<number>(agents + 1).fill(0);
  for (const t of tensors) t.counts.forEach((c, i) => (counts[i] = (counts[i] ?? 0) + c));
  const totals: ModelStats = {
    agents,
    tensors: tensors.length,
    numel: tensors.reduce((sum, t) => sum + t.numel, 0),
    counts,
    nonFinite: Number(json.nonFinite ?? 0),
    nonFiniteModels: [Number(json.base?.nonFinite ?? 0), ...models.map((m) => m.nonFinite)],
    changed: models.map((m) => m.changed),
    unique: models.map((m) => m.unique),
    shared: models.map((m) => m.shared),
    overlap: models.map((m) => m.overlap),
    rho: models.map((m) => (m.rho === 'Infinity' ? Infinity : Number(m.rho))),
    signConflicts: tensors.reduce((sum, t) => sum + t.signConflicts, 0),
    magnitude: models.map((m) => m.magnitude ?? new Array<number>(MAGNITUDE_BINS.length).fill(0)),
    oneUlp: models.map((m) => m.oneUlp ?? 0),
  };
  return { epsilon, tensors: [], totals };
}

/**
 * An upper bound on the bytes statsJson writes for `agents` agents over `base` (pretty-printed, each
 * number on a line of its own at up to 24 bytes), so that --stats can be checked for free space before
 * a merge rather than fail after it.
 */
export function predictStatsBytes(base: Model, agents: number): number {
  const perNumber = 24;
  let bytes = 64 * 1024 + agents * (1024 + (MAGNITUDE_BINS.length + 16) * perNumber);
  for (const name of base.tensors.keys()) bytes += 400 + 2 * name.length + (4 * agents + 6) * perNumber;
  return bytes;
}

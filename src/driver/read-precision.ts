// Models read at one precision D (SPEC.md "Inputs stored in other precisions"): each model's window is
// read in its stored dtype and re-encoded to D before the engine sees it, so the GPU and the CPU engine
// get the same rounded values and every kernel keeps one input dtype per tensor. Where a model stores
// the tensor in D already its bytes go to the engine as they are: a uniform set reads as before.

import { checkCompatibility } from '../format/compat.ts';
import { dtypeBits, isMergeableDtype, type FloatDtype } from '../format/dtype.ts';
import type { Model } from '../format/model.ts';
import { readRounds, recodeFloats, tensorReadDtype, type ReadDtype } from '../format/precision.ts';
import { must } from '../io/checked.ts';

/** Each model's stored dtype of tensor `name` (base first) and the dtype it is read at. */
export function tensorDtypes(
  models: readonly Model[],
  name: string,
  asked: ReadDtype | undefined,
): { stored: FloatDtype[]; read: FloatDtype } {
  const stored = models.map(
    (m) => must(m.tensors.get(name), `tensor ${name} of ${m.name}`).dtype as FloatDtype,
  );
  return { stored, read: tensorReadDtype(stored, asked) };
}

/** Elements re-encoded per piece: the stored bytes of a piece go through one reused scratch buffer. */
const PIECE = 1 << 20;

/**
 * Scratch buffers of PIECE f32 values, reused: a fresh 32 MiB buffer per window cost more in page
 * faults than the re-encoding (300 ms against 40 ms per 2^23 values on the CI VM). One per read in
 * flight, so concurrent reads of several models never share one; a few kept.
 */
const scratch: Uint8Array[] = [];

/**
 * Reads `count` elements of a model stored in `from` into `into` at `to`: `fetch(at, bytes, target)`
 * reads `bytes` stored bytes from byte `at` of the range. Returns the finite values that became ±Inf
 * at `to`.
 */
export async function readAt(
  from: FloatDtype,
  to: FloatDtype,
  count: number,
  into: Uint8Array,
  fetch: (at: number, bytes: number, target: Uint8Array) => Promise<void>,
): Promise<number> {
  const size = dtypeBits(from) / 8;
  if (from === to) {
    await fetch(0, count * size, into);
    return 0;
  }
  const outSize = dtypeBits(to) / 8;
  const buffer = scratch.pop() ?? new Uint8Array(PIECE * 4);
  let overflow = 0;
  try {
    for (let start = 0; start < count; start += PIECE) {
      const n = Math.min(PIECE, count - start);
      const raw = buffer.subarray(0, n * size);
      await fetch(start * size, n * size, raw);
      overflow += recodeFloats(from, to, raw, into.subarray(start * outSize, (start + n) * outSize), n);
    }
  } finally {
    if (scratch.length < 8) scratch.push(buffer);
  }
  return overflow;
}

/** The models whose finite values became ±Inf at the read precision, per tensor, for the error. */
export class RoundedToInf {
  private readonly found = new Map<string, Map<number, FloatDtype>>();

  add(tensor: string, model: number, read: FloatDtype): void {
    let models = this.found.get(tensor);
    if (!models) this.found.set(tensor, (models = new Map()));
    models.set(model, read);
  }

  /** A clause naming them (labels: base first), or '' where none did. */
  describe(tensor: string, labels: readonly string[]): string {
    const models = this.found.get(tensor);
    if (!models) return '';
    const named = [...models].map(
      ([m, read]) =>
        `${m === 0 ? 'base' : 'agent'} ${labels[m] ?? m} holds finite values beyond ${read}'s range`,
    );
    return ` Read at ${[...models.values()][0]}: ${named.join(', ')}, which count as ±Inf there (SPEC.md).`;
  }
}

/** Whether any tensor of the set is read at a precision that rounds a model's values. */
export function roundedTensors(
  models: readonly Model[],
  names: readonly string[],
  asked: ReadDtype | undefined,
): string[] {
  return names.filter((name) => {
    const { stored, read } = tensorDtypes(models, name, asked);
    return readRounds(stored, read);
  });
}

/** Whether two read precisions read every merged tensor of the models at the same dtype. */
export function sameReads(
  models: readonly Model[],
  names: readonly string[],
  a: ReadDtype | undefined,
  b: ReadDtype | undefined,
): boolean {
  return names.every((name) => tensorDtypes(models, name, a).read === tensorDtypes(models, name, b).read);
}

/** A read precision as a stats JSON writes it ('default' for none), back to the value. */
export function readDtypeOf(text: string): ReadDtype | undefined {
  return text === 'BF16' || text === 'F16' || text === 'F32' || text === 'stored' ? text : undefined;
}

/** The one float dtype that reads every named tensor as the default read precision does, or null. */
export function defaultReadAs(models: readonly Model[], names: readonly string[]): FloatDtype | null {
  const found = (['F32', 'BF16', 'F16'] as const).find((d) => sameReads(models, names, undefined, d));
  return found ?? null;
}

/**
 * The `dtype` a recipe writes for read precision `asked` (mergekit's dtype, which a recipe read back
 * takes as D): `stored` reads as F32 does (every stored value widens to it exactly); the default as
 * `defaultAs` (defaultReadAs), null where no one dtype says it (the recipe then has none, which reads
 * back as the default).
 */
export function recipeReadDtype(
  asked: ReadDtype | undefined,
  defaultAs: FloatDtype | null,
): FloatDtype | null {
  if (asked === undefined) return defaultAs;
  return asked === 'stored' ? 'F32' : asked;
}

/** What the studio's "compare at" control says of a set (CheckReport.precision). */
export interface ReadPrecisionFacts {
  /** Merged tensors the models store in more than one dtype (0: a uniform set, read as stored). */
  mixedTensors: number;
  /** Per model, base first: the dtypes its merged tensors are stored in. */
  modelDtypes: FloatDtype[][];
  /** The recipe's dtype for the default read precision (defaultReadAs). */
  defaultAs: FloatDtype | null;
}

/** The facts of a set's stored dtypes over the tensors a merge would merge. */
export function readPrecisionFacts(
  base: Model,
  agents: readonly Model[],
  names: readonly string[],
): ReadPrecisionFacts {
  const models = [base, ...agents];
  const modelDtypes = models.map(() => new Set<FloatDtype>());
  let mixedTensors = 0;
  for (const name of names) {
    const { stored } = tensorDtypes(models, name, undefined);
    stored.forEach((d, m) => modelDtypes[m]?.add(d));
    if (stored.some((d) => d !== stored[0])) mixedTensors += 1;
  }
  return {
    mixedTensors,
    modelDtypes: modelDtypes.map((set) => [...set].sort()),
    defaultAs: defaultReadAs(models, names),
  };
}

/** The names of the tensors a merge of these models merges (driver.ts mergeableTensors, without the driver). */
export function comparedNames(base: Model, agents: readonly Model[]): string[] {
  return checkCompatibility(base, [...agents]).common.filter((name) => {
    const dtype = base.tensors.get(name)?.dtype;
    return dtype !== undefined && isMergeableDtype(dtype);
  });
}

// The open reply: an opened model's facts with its tensor list in columns (one string of names and
// typed arrays), so a 300,000-tensor model crosses from the worker to the page as a few arrays
// instead of 300,000 cloned objects, and the page builds a tensor's record only when it shows one.
// The check reply's issues come in columns from the check itself (compatColumns in format/compat.ts).
import { DTYPES, type Dtype } from '../format/dtype.ts';
import { modelFacts, type InspectReport } from '../format/inspect.ts';
import type { Model } from '../format/model.ts';
import type { PeftAdapter } from '../format/peft.ts';

/** Every tensor of a model, in the model's (name) order, one column per field. */
export interface TensorColumns {
  count: number;
  /** Every name concatenated: tensor i's is `names.slice(nameEnds[i - 1] ?? 0, nameEnds[i])`. */
  names: string;
  nameEnds: Uint32Array;
  /** Index into DTYPES. */
  dtypes: Uint8Array;
  /** Every shape's dimensions concatenated, ended per tensor by `shapeEnds` as the names are. */
  dims: Float64Array;
  shapeEnds: Uint32Array;
  /** Index into the summary's `files`. */
  files: Uint32Array;
  bytes: Float64Array;
}

export type TensorRecord = InspectReport['tensors'][number];

/** What the page keeps of an opened model: the inspect report, its tensors in columns. */
export interface ModelSummary extends Omit<InspectReport, 'tensors'> {
  tensors: TensorColumns;
  /** A LoRA adapter opened as an agent: what it is (its tensors are the adapter's own). */
  adapter?: PeftAdapter;
}

const DTYPE_INDEX = new Map<Dtype, number>(DTYPES.map((dtype, i) => [dtype, i]));

/** The worker's side: no object per tensor, every column sized before it is filled. */
export function summarizeModel(model: Model): ModelSummary {
  const facts = modelFacts(model);
  const fileIndex = new Map(facts.files.map(({ file }, i) => [file, i]));
  const count = model.tensors.size;
  const nameEnds = new Uint32Array(count);
  const dtypes = new Uint8Array(count);
  const shapeEnds = new Uint32Array(count);
  const files = new Uint32Array(count);
  const bytes = new Float64Array(count);
  const names = new Array<string>(count);
  let dimCount = 0;
  for (const t of model.tensors.values()) dimCount += t.shape.length;
  const dims = new Float64Array(dimCount);
  let nameEnd = 0;
  let dimEnd = 0;
  let i = 0;
  // Tensors of one shard come together: its index is looked up once per run, not per tensor.
  let lastFile = '';
  let lastIndex = 0;
  for (const t of model.tensors.values()) {
    names[i] = t.name;
    nameEnd += t.name.length;
    nameEnds[i] = nameEnd;
    dtypes[i] = DTYPE_INDEX.get(t.dtype) ?? 0;
    for (const dim of t.shape) dims[dimEnd++] = dim;
    shapeEnds[i] = dimEnd;
    if (t.file !== lastFile) {
      lastFile = t.file;
      lastIndex = fileIndex.get(t.file) ?? 0;
    }
    files[i] = lastIndex;
    bytes[i] = t.end - t.begin;
    i++;
  }
  const tensors: TensorColumns = {
    count,
    names: names.join(''),
    nameEnds,
    dtypes,
    dims,
    shapeEnds,
    files,
    bytes,
  };
  return { ...facts, tensors };
}

/** Tensor i's name, without building the rest of its record. */
export function tensorName(columns: TensorColumns, i: number): string {
  return columns.names.slice(i > 0 ? (columns.nameEnds[i - 1] ?? 0) : 0, columns.nameEnds[i]);
}

/** Tensor i as the inspect report lists it. */
export function tensorRecord(summary: ModelSummary, i: number): TensorRecord {
  const { tensors: columns } = summary;
  const shapeStart = i > 0 ? (columns.shapeEnds[i - 1] ?? 0) : 0;
  return {
    name: tensorName(columns, i),
    dtype: DTYPES[columns.dtypes[i] ?? 0] ?? 'BOOL',
    shape: Array.from(columns.dims.subarray(shapeStart, columns.shapeEnds[i])),
    file: summary.files[columns.files[i] ?? 0]?.file ?? '',
    bytes: columns.bytes[i] ?? 0,
  };
}

const decoded = new WeakMap<TensorColumns, TensorRecord[]>();

/** Every tensor as a record, built once per summary: for the few views that need the whole list. */
export function tensorRecords(summary: ModelSummary): TensorRecord[] {
  let records = decoded.get(summary.tensors);
  if (!records) {
    records = Array.from({ length: summary.tensors.count }, (_, i) => tensorRecord(summary, i));
    decoded.set(summary.tensors, records);
  }
  return records;
}

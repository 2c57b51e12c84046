// Compares two models element by element in the engine worker: the per-tensor counts of values
// that differ, which the page shows as the share of each layer two merges disagree on.
import { decodeFloats, dtypeBits, isMergeableDtype, type FloatDtype } from '../format/dtype.ts';
import type { Model } from '../format/model.ts';
import { numel } from '../format/safetensors.ts';
import type { CompareReport } from './protocol.ts';

/** Elements compared per read: two windows of at most this many values are held at once. */
const COMPARE_WINDOW = 1 << 20;

/** Counts, per common tensor, the elements whose values differ (across dtypes, by value). */
export async function compareModels(a: Model, b: Model, signal: AbortSignal): Promise<CompareReport> {
  const tensors: CompareReport['tensors'] = [];
  const unmatched: string[] = [];
  for (const [name, x] of a.tensors) {
    const y = b.tensors.get(name);
    const same =
      y !== undefined &&
      isMergeableDtype(x.dtype) &&
      isMergeableDtype(y.dtype) &&
      x.shape.length === y.shape.length &&
      x.shape.every((d, i) => d === y.shape[i]);
    if (!same || !y) {
      unmatched.push(name);
      continue;
    }
    const elements = numel(x.shape);
    const xw = dtypeBits(x.dtype) / 8;
    const yw = dtypeBits(y.dtype) / 8;
    let differ = 0;
    for (let at = 0; at < elements; at += COMPARE_WINDOW) {
      signal.throwIfAborted();
      const count = Math.min(COMPARE_WINDOW, elements - at);
      const [xb, yb] = await Promise.all([
        a.source(x.file).read(x.offset + at * xw, count * xw),
        b.source(y.file).read(y.offset + at * yw, count * yw),
      ]);
      const xv = decodeFloats(x.dtype as FloatDtype, xb, count);
      const yv = decodeFloats(y.dtype as FloatDtype, yb, count);
      for (let i = 0; i < count; i++) if (!Object.is(xv[i], yv[i])) differ++;
    }
    tensors.push({ name, numel: elements, differ });
  }
  for (const name of b.tensors.keys()) if (!a.tensors.has(name)) unmatched.push(name);
  return { tensors, unmatched };
}

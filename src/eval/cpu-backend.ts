// The EvalBackend over the f64 reference (reference.ts): weights decoded exactly from their stored
// bytes, activations as Float64Array. Slow, but it is what the GPU backend is checked against, op by
// op and through whole forward passes.

import { decodeFloats } from '../format/dtype.ts';
import type {
  Act,
  AttentionShape,
  EvalBackend,
  RowScore,
  ScoreState,
  SequenceLayout,
  StoredTensor,
  Weight,
} from './backend.ts';
import * as ref from './reference.ts';

class CpuAct implements Act {
  released = false;
  constructor(readonly mat: ref.Mat) {}
  get rows(): number {
    return this.mat.rows;
  }
  get cols(): number {
    return this.mat.cols;
  }
}

class CpuWeight implements Weight {
  released = false;
  constructor(
    readonly name: string,
    readonly dtype: StoredTensor['dtype'],
    readonly shape: readonly number[],
    readonly values: Float64Array,
  ) {}
}

class CpuScore implements ScoreState {
  released = false;
  constructor(readonly state: ref.ScoreRows) {}
  get rows(): number {
    return this.state.targets.length;
  }
}

/** Elements of a shape; a negative or fractional dimension is an error naming the tensor. */
export function shapeElements(shape: readonly number[], what: string): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0)
      throw new RangeError(`${what}: shape [${shape.join(', ')}] is not a shape`);
    n *= d;
  }
  return n;
}

/** The bytes a stored tensor must have; a mismatch names the tensor. */
export function checkStoredTensor(tensor: StoredTensor): number {
  const count = shapeElements(tensor.shape, tensor.name);
  const bytes = count * (tensor.dtype === 'F32' ? 4 : 2);
  if (tensor.bytes.byteLength !== bytes)
    throw new RangeError(
      `${tensor.name}: ${tensor.bytes.byteLength} bytes for ${tensor.dtype} [${tensor.shape.join(', ')}] (${bytes} expected)`,
    );
  return count;
}

/** [out, in] of a weight used as a matrix; a 1-D weight or a mismatch in `in` is named. */
export function matrixShape(w: Weight, inFeatures: number, op: string): [number, number] {
  const [rows, cols] = w.shape;
  if (w.shape.length !== 2 || rows === undefined || cols === undefined)
    throw new RangeError(`${op}: ${w.name} has shape [${w.shape.join(', ')}], a matrix [out, in] expected`);
  if (cols !== inFeatures)
    throw new RangeError(
      `${op}: ${w.name} is [${rows}, ${cols}] but the input rows have ${inFeatures} values`,
    );
  return [rows, cols];
}

/** The length of a weight used as a vector (norm scale, bias); another length is named. */
export function vectorLength(w: Weight, length: number, op: string): void {
  if (w.shape.length !== 1 || w.shape[0] !== length)
    throw new RangeError(`${op}: ${w.name} has shape [${w.shape.join(', ')}], [${length}] expected`);
}

export function createCpuEvalBackend(): EvalBackend {
  function act(x: Act): ref.Mat {
    if (!(x instanceof CpuAct)) throw new TypeError('cpu backend: an activation of another backend');
    if (x.released) throw new Error('cpu backend: an activation used after release()');
    return x.mat;
  }
  function weight(w: Weight): CpuWeight {
    if (!(w instanceof CpuWeight)) throw new TypeError(`cpu backend: weight ${w.name} of another backend`);
    if (w.released) throw new Error(`cpu backend: weight ${w.name} used after release()`);
    return w;
  }
  function score(s: ScoreState): ref.ScoreRows {
    if (!(s instanceof CpuScore)) throw new TypeError('cpu backend: a score state of another backend');
    if (s.released) throw new Error('cpu backend: a score state used after release()');
    return s.state;
  }
  const wrap = (m: ref.Mat): Act => new CpuAct(m);
  function matrix(w: Weight, inFeatures: number, op: string): ref.Mat {
    const [rows, cols] = matrixShape(w, inFeatures, op);
    return ref.mat(weight(w).values, rows, cols, w.name);
  }

  return {
    name: 'cpu-f64',
    async weight(tensor) {
      const count = checkStoredTensor(tensor);
      return new CpuWeight(
        tensor.name,
        tensor.dtype,
        [...tensor.shape],
        decodeFloats(tensor.dtype, tensor.bytes, count),
      );
    },
    upload(values, rows, cols) {
      return wrap(ref.mat(Float64Array.from(values), rows, cols, 'upload'));
    },
    rmsNorm(x, w, eps) {
      vectorLength(w, x.cols, 'rmsNorm');
      return wrap(ref.rmsNorm(act(x), weight(w).values, eps));
    },
    groupRmsNorm(x, w, dim, eps) {
      vectorLength(w, dim, 'groupRmsNorm');
      return wrap(ref.groupRmsNorm(act(x), weight(w).values, dim, eps));
    },
    linear(x, w, bias) {
      const m = matrix(w, x.cols, 'linear');
      if (bias) vectorLength(bias, m.rows, 'linear bias');
      return wrap(ref.linear(act(x), m, bias && weight(bias).values));
    },
    rope(x, cos, sin, headDim) {
      return wrap(ref.rope(act(x), cos, sin, headDim));
    },
    attention(q, k, v, layout: SequenceLayout, shape: AttentionShape) {
      return wrap(ref.attention(act(q), act(k), act(v), layout.seqStart, shape));
    },
    siluMul(gate, up) {
      return wrap(ref.siluMul(act(gate), act(up)));
    },
    add(a, b) {
      return wrap(ref.add(act(a), act(b)));
    },
    gather(x, rows) {
      return wrap(ref.gather(act(x), rows));
    },
    scoreStart(targets) {
      return new CpuScore(ref.scoreStart(targets));
    },
    scoreChunk(state, x, w, vocabStart) {
      const s = score(state);
      if (x.rows !== state.rows)
        throw new RangeError(`scoreChunk: x has ${x.rows} rows for a state of ${state.rows} rows`);
      ref.scoreChunk(s, ref.linear(act(x), matrix(w, x.cols, 'scoreChunk')), vocabStart);
    },
    async scoreRead(state): Promise<RowScore> {
      return ref.scoreRead(score(state));
    },
    async read(x) {
      return Float64Array.from(act(x).data);
    },
    release(x) {
      if (x instanceof CpuAct || x instanceof CpuWeight || x instanceof CpuScore) x.released = true;
      else throw new TypeError('cpu backend: release() of an object of another backend');
    },
    async flush() {},
    destroy() {},
  };
}

// The EvalBackend on WebGPU: f32 activations in storage buffers, weights in their stored dtype
// (decoded exactly in the kernels), every op a dispatch queued on one GpuStream (stream.ts). A weight
// larger than one binding (maxStorageBufferBindingSize, or options.maxBufferBytes) is split by rows
// into blocks of their own buffers, and linear and the score dispatch once per block.

import { pad4, splitDispatch, type Dispatch } from '../../engine/gpu/plumbing.ts';
import type { FloatDtype } from '../../format/dtype.ts';
import type {
  Act,
  AttentionShape,
  EvalBackend,
  RowScore,
  ScoreState,
  SequenceLayout,
  StoredTensor,
  Weight,
} from '../backend.ts';
import { checkStoredTensor, matrixShape, vectorLength } from '../cpu-backend.ts';
import { checkAttentionShape, checkSeqStart } from '../reference.ts';
import { ATTENTION_MAX_HEAD_DIM, evalAttentionRequest } from './kernels/attention.ts';
import { ELEMENTWISE_WORKGROUP, evalElementwiseRequest, evalGatherRequest } from './kernels/elementwise.ts';
import { evalLinearRequest, LINEAR_TILE_OUTS, LINEAR_TILE_ROWS } from './kernels/linear.ts';
import { evalRmsNormRequest } from './kernels/rms_norm.ts';
import { evalRopeRequest } from './kernels/rope.ts';
import { evalScoreRequest, initialScoreState, readScoreState, SCORE_STATE_BYTES } from './kernels/score.ts';
import { GpuStream } from './stream.ts';
import { DTYPE_CODE } from '../../engine/gpu/kernels/kernel.ts';

export interface GpuEvalOptions {
  /**
   * Largest block of a matrix weight in bytes (default and cap: the device's binding and buffer
   * limits); a larger matrix is split by rows. Vectors (norms, biases) are kept whole.
   */
  maxBufferBytes?: number;
  /** Bytes of released activation buffers kept for reuse (default 256 MiB). */
  poolBytes?: number;
  /** Largest logits block of one score dispatch in bytes (default 64 MiB): bounds the scratch. */
  maxLogitsBytes?: number;
}

class GpuAct implements Act {
  /** Set by the step that computes it (or at upload); read by later steps only. */
  buffer: GPUBuffer | null = null;
  released = false;
  constructor(
    readonly rows: number,
    readonly cols: number,
  ) {}
}

/** Rows [rowStart, rowStart + rows) of a weight, in a buffer of their own (element 0 at byte 0). */
interface WeightBlock {
  buffer: GPUBuffer;
  rowStart: number;
  rows: number;
}

class GpuWeight implements Weight {
  released = false;
  constructor(
    readonly name: string,
    readonly dtype: FloatDtype,
    readonly shape: readonly number[],
    readonly blocks: readonly WeightBlock[],
  ) {}
}

class GpuScore implements ScoreState {
  released = false;
  constructor(
    readonly rows: number,
    readonly buffer: GPUBuffer,
  ) {}
}

const bytesOf = (dtype: FloatDtype) => (dtype === 'F32' ? 4 : 2);

export function createGpuEvalBackend(device: GPUDevice, options: GpuEvalOptions = {}): EvalBackend {
  const limits = device.limits;
  const bindingBytes = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  // A multiple of 4, so a block padded to whole words stays inside it.
  const weightBytes = Math.floor(Math.min(bindingBytes, options.maxBufferBytes ?? Infinity) / 4) * 4;
  if (!(weightBytes >= 4)) throw new RangeError(`gpu eval backend: maxBufferBytes ${options.maxBufferBytes}`);
  const logitsBytes = Math.min(bindingBytes, options.maxLogitsBytes ?? 64 * 2 ** 20);
  const maxGroups = limits.maxComputeWorkgroupsPerDimension;
  const stream = new GpuStream(device, options.poolBytes ?? 256 * 2 ** 20);
  // Bound where a linear has no bias (a binding cannot be left empty).
  let noBias: GPUBuffer | null = null;

  function act(x: Act, op: string): GpuAct {
    if (!(x instanceof GpuAct)) throw new TypeError(`${op}: an activation of another backend`);
    if (x.released) throw new Error(`${op}: an activation used after release()`);
    return x;
  }
  function weight(w: Weight, op: string): GpuWeight {
    if (!(w instanceof GpuWeight)) throw new TypeError(`${op}: weight ${w.name} of another backend`);
    if (w.released) throw new Error(`${op}: weight ${w.name} used after release()`);
    return w;
  }
  function score(s: ScoreState, op: string): GpuScore {
    if (!(s instanceof GpuScore)) throw new TypeError(`${op}: a score state of another backend`);
    if (s.released) throw new Error(`${op}: a score state used after release()`);
    return s;
  }
  /** The buffer of an activation computed by an earlier step. */
  function bufferOf(x: GpuAct): GPUBuffer {
    if (!x.buffer) throw new Error('gpu eval backend: an activation read before it was computed');
    return x.buffer;
  }
  /** A new activation [rows, cols] whose buffer `compute` fills in a queued step. */
  function output(
    rows: number,
    cols: number,
    op: string,
    compute: (out: GPUBuffer) => Promise<void> | void,
  ): Act {
    const bytes = rows * cols * 4;
    if (bytes > bindingBytes)
      throw new RangeError(
        `${op}: [${rows}, ${cols}] f32 is ${bytes} bytes, over the ${bindingBytes}-byte binding limit`,
      );
    const out = new GpuAct(rows, cols);
    stream.enqueue(async () => {
      out.buffer = stream.alloc(bytes, `eval.${op}`);
      await compute(out.buffer);
    });
    return out;
  }
  function spread(groups: number): Dispatch {
    return splitDispatch(groups, maxGroups);
  }

  /**
   * Queues x · Wᵀ for W rows [rowStart, rowStart + count) of one block (rows counted inside it) into
   * columns [outStart, outStart + count) of out, whose rows have outStride values.
   */
  async function linearBlock(
    x: GpuAct,
    w: GpuWeight,
    block: WeightBlock,
    rowStart: number,
    count: number,
    out: GPUBuffer,
    outStride: number,
    outStart: number,
    bias?: GpuWeight,
  ): Promise<void> {
    const tilesOut = Math.ceil(count / LINEAR_TILE_OUTS);
    const tilesRows = Math.ceil(x.rows / LINEAR_TILE_ROWS);
    if (tilesOut > maxGroups || tilesRows > maxGroups)
      throw new RangeError(`linear ${w.name}: ${count} outputs × ${x.rows} rows exceed one dispatch`);
    const params = stream.uniform([
      x.rows,
      x.cols,
      count,
      outStride,
      outStart,
      rowStart,
      bias ? DTYPE_CODE[bias.dtype] : 0,
      bias ? 1 : 0,
    ]);
    noBias ??= stream.upload('eval.no-bias', new Uint8Array(4));
    const biasBuffer = bias ? (bias.blocks[0] as WeightBlock).buffer : noBias;
    await stream.dispatch(
      evalLinearRequest(w.dtype),
      { params, x: bufferOf(x), weight: block.buffer, bias: biasBuffer, out },
      { x: tilesOut, y: tilesRows, groups: tilesOut * tilesRows },
    );
  }

  async function uploadWeight(tensor: StoredTensor): Promise<Weight> {
    const count = checkStoredTensor(tensor);
    const matrix = tensor.shape.length >= 2;
    // A matrix splits by rows (a row spans its last dimension); a vector (norm, bias) stays whole.
    const rowLength = matrix ? (tensor.shape[tensor.shape.length - 1] as number) : count;
    const rows = rowLength === 0 ? 0 : count / rowLength;
    const rowBytes = rowLength * bytesOf(tensor.dtype);
    const limit = matrix ? weightBytes : bindingBytes;
    const perBlock = matrix ? Math.floor(limit / Math.max(1, rowBytes)) : 1;
    if (perBlock < 1 || pad4(rowBytes) > limit)
      throw new RangeError(`${tensor.name}: a row of ${rowBytes} bytes does not fit a ${limit}-byte buffer`);
    const blocks: WeightBlock[] = [];
    // Each block in its own buffer from byte 0: a 16-bit block of odd rows never starts mid-word.
    for (let rowStart = 0; rowStart < Math.max(rows, 1); rowStart += perBlock) {
      const blockRows = Math.min(perBlock, rows - rowStart);
      const bytes = tensor.bytes.subarray(rowStart * rowBytes, (rowStart + blockRows) * rowBytes);
      blocks.push({ buffer: stream.upload(`eval.weight:${tensor.name}`, bytes), rowStart, rows: blockRows });
    }
    return new GpuWeight(tensor.name, tensor.dtype, [...tensor.shape], blocks);
  }

  function norm(x: Act, w: Weight, dim: number, eps: number, op: string): Act {
    const input = act(x, op);
    const scale = weight(w, op);
    if (!Number.isInteger(dim) || dim <= 0 || input.cols % dim !== 0)
      throw new RangeError(`${op}: group size ${dim} does not divide the row length ${input.cols}`);
    vectorLength(scale, dim, op);
    const instances = input.rows * (input.cols / dim);
    return output(input.rows, input.cols, op, (out) => {
      const dispatch = spread(instances);
      const params = stream.uniform([instances, dim, dispatch.x, { f32: eps }]);
      return stream.dispatch(
        evalRmsNormRequest(scale.dtype),
        { params, x: bufferOf(input), weight: (scale.blocks[0] as WeightBlock).buffer, out },
        dispatch,
      );
    });
  }

  function elementwise(a: Act, b: Act, op: 'add' | 'siluMul'): Act {
    const left = act(a, op);
    const right = act(b, op);
    if (left.rows !== right.rows || left.cols !== right.cols)
      throw new RangeError(
        `${op}: shapes [${left.rows}, ${left.cols}] and [${right.rows}, ${right.cols}] differ`,
      );
    const count = left.rows * left.cols;
    return output(left.rows, left.cols, op, (out) => {
      const dispatch = spread(Math.ceil(count / ELEMENTWISE_WORKGROUP));
      const params = stream.uniform([count, dispatch.x]);
      return stream.dispatch(
        evalElementwiseRequest(op),
        { params, a: bufferOf(left), b: bufferOf(right), out },
        dispatch,
      );
    });
  }

  /** A table or index list as a buffer of its own, destroyed after the step's submit. */
  function table(values: Float32Array | Uint32Array, label: string): GPUBuffer {
    const buffer = stream.upload(label, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
    stream.transient(buffer);
    return buffer;
  }

  return {
    name: 'webgpu-f32',
    weight: uploadWeight,
    upload(values, rows, cols) {
      if (
        !Number.isInteger(rows) ||
        !Number.isInteger(cols) ||
        rows < 0 ||
        cols < 0 ||
        values.length !== rows * cols
      )
        throw new RangeError(`upload: ${values.length} values for [${rows}, ${cols}]`);
      if (values.byteLength > bindingBytes)
        throw new RangeError(
          `upload: ${values.byteLength} bytes, over the ${bindingBytes}-byte binding limit`,
        );
      const x = new GpuAct(rows, cols);
      // A new buffer, filled at creation: nothing queued before can see it.
      const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
      // COPY_SRC as every activation has, so it can be read and pooled with them.
      x.buffer = stream.upload('eval.upload', bytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
      return x;
    },
    rmsNorm: (x, w, eps) => norm(x, w, x.cols, eps, 'rmsNorm'),
    groupRmsNorm: (x, w, dim, eps) => norm(x, w, dim, eps, 'groupRmsNorm'),
    linear(x, w, bias) {
      const input = act(x, 'linear');
      const matrix = weight(w, 'linear');
      const [outFeatures] = matrixShape(matrix, input.cols, 'linear');
      const b = bias && weight(bias, 'linear bias');
      if (b) vectorLength(b, outFeatures, 'linear bias');
      return output(input.rows, outFeatures, 'linear', async (out) => {
        for (const block of matrix.blocks)
          await linearBlock(input, matrix, block, 0, block.rows, out, outFeatures, block.rowStart, b);
      });
    },
    rope(x, cos, sin, headDim) {
      const input = act(x, 'rope');
      if (!Number.isInteger(headDim) || headDim <= 0 || headDim % 2 !== 0 || input.cols % headDim !== 0)
        throw new RangeError(
          `rope: head size ${headDim} must be even and divide the row length ${input.cols}`,
        );
      const half = headDim / 2;
      for (const [name, t] of [
        ['cos', cos],
        ['sin', sin],
      ] as const)
        if (t.length !== input.rows * half)
          throw new RangeError(`rope: ${name} table has ${t.length} values, ${input.rows}·${half} expected`);
      const heads = input.cols / headDim;
      const total = input.rows * heads * half;
      const cosTable = Float32Array.from(cos);
      const sinTable = Float32Array.from(sin);
      return output(input.rows, input.cols, 'rope', (out) => {
        const dispatch = spread(Math.ceil(total / ELEMENTWISE_WORKGROUP));
        const params = stream.uniform([total, half, heads, dispatch.x]);
        const io = {
          params,
          x: bufferOf(input),
          cos_table: table(cosTable, 'eval.rope.cos'),
          sin_table: table(sinTable, 'eval.rope.sin'),
          out,
        };
        return stream.dispatch(evalRopeRequest(), io, dispatch);
      });
    },
    attention(q, k, v, layout: SequenceLayout, shape: AttentionShape) {
      const [qa, ka, va] = [act(q, 'attention'), act(k, 'attention'), act(v, 'attention')];
      checkAttentionShape(qa, ka, va, shape);
      checkSeqStart(layout.seqStart, qa.rows);
      if (shape.headDim > ATTENTION_MAX_HEAD_DIM)
        throw new RangeError(
          `attention: head size ${shape.headDim} over the kernel's ${ATTENTION_MAX_HEAD_DIM}`,
        );
      const starts = Uint32Array.from(layout.seqStart);
      const { heads, kvHeads, headDim, window, scale } = shape;
      return output(qa.rows, qa.cols, 'attention', (out) => {
        const dispatch = spread(qa.rows * heads);
        const params = stream.uniform([
          qa.rows,
          heads,
          kvHeads,
          headDim,
          window,
          dispatch.x,
          { f32: scale },
          0,
        ]);
        const io = {
          params,
          q: bufferOf(qa),
          k: bufferOf(ka),
          v: bufferOf(va),
          seq_start: table(starts, 'eval.seq-start'),
          out,
        };
        return stream.dispatch(evalAttentionRequest(), io, dispatch);
      });
    },
    siluMul: (gate, up) => elementwise(gate, up, 'siluMul'),
    add: (a, b) => elementwise(a, b, 'add'),
    gather(x, rows) {
      const input = act(x, 'gather');
      for (const r of rows)
        if (!Number.isInteger(r) || r < 0 || r >= input.rows)
          throw new RangeError(`gather: row ${r} is outside [0, ${input.rows})`);
      const index = Uint32Array.from(rows);
      const count = rows.length * input.cols;
      return output(rows.length, input.cols, 'gather', (out) => {
        const dispatch = spread(Math.ceil(count / ELEMENTWISE_WORKGROUP));
        const params = stream.uniform([count, Math.max(1, input.cols), dispatch.x, 0]);
        const io = { params, x: bufferOf(input), index: table(index, 'eval.gather.index'), out };
        return stream.dispatch(evalGatherRequest(), io, dispatch);
      });
    },

    scoreStart(targets) {
      const bytes = new Uint8Array(initialScoreState(targets));
      const buffer = stream.upload('eval.score', bytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
      return new GpuScore(targets.length, buffer);
    },
    scoreChunk(state, x, w, vocabStart) {
      const s = score(state, 'scoreChunk');
      const input = act(x, 'scoreChunk');
      const head = weight(w, 'scoreChunk');
      matrixShape(head, input.cols, 'scoreChunk');
      if (input.rows !== s.rows)
        throw new RangeError(`scoreChunk: x has ${input.rows} rows for a state of ${s.rows} rows`);
      if (!Number.isInteger(vocabStart) || vocabStart < 0)
        throw new RangeError(`scoreChunk: vocabStart ${vocabStart}`);
      // Logits of at most `span` vocabulary rows at a time go through one scratch buffer.
      const span = Math.max(1, Math.floor(logitsBytes / Math.max(1, input.rows * 4)));
      stream.enqueue(async () => {
        const widest = Math.min(span, Math.max(...head.blocks.map((b) => b.rows)));
        const logits = stream.alloc(input.rows * widest * 4, 'eval.logits');
        for (const block of head.blocks)
          for (let start = 0; start < block.rows; start += span) {
            const count = Math.min(span, block.rows - start);
            await linearBlock(input, head, block, start, count, logits, count, 0);
            const dispatch = spread(s.rows);
            const params = stream.uniform([s.rows, count, vocabStart + block.rowStart + start, dispatch.x]);
            await stream.dispatch(evalScoreRequest(), { params, logits, state: s.buffer }, dispatch);
          }
        stream.recycle(logits);
      });
    },
    async scoreRead(state): Promise<RowScore> {
      const s = score(state, 'scoreRead');
      const bytes = await stream.read(() => s.buffer, s.rows * SCORE_STATE_BYTES);
      return readScoreState(bytes, s.rows);
    },

    async read(x) {
      const input = act(x, 'read');
      const bytes = await stream.read(() => bufferOf(input), input.rows * input.cols * 4);
      return Float64Array.from(new Float32Array(bytes));
    },
    release(x) {
      if (x instanceof GpuAct) {
        act(x, 'release');
        x.released = true;
        stream.enqueue(() => stream.recycle(bufferOf(x)));
      } else if (x instanceof GpuWeight) {
        weight(x, 'release');
        x.released = true;
        stream.enqueue(() => x.blocks.forEach((b) => stream.discard(b.buffer)));
      } else if (x instanceof GpuScore) {
        score(x, 'release');
        x.released = true;
        stream.enqueue(() => stream.discard(x.buffer));
      } else throw new TypeError('release: an object of another backend');
    },
    flush: () => stream.flush(),
    destroy: () => stream.destroy(),
  };
}

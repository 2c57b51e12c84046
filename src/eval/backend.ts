// The operations a decoder-only forward pass is made of, as one interface with two implementations:
// the WGSL kernels (src/eval/gpu/gpu-backend.ts, f32 math) and the CPU reference
// (src/eval/cpu-backend.ts over src/eval/reference.ts, f64 math). forward.ts sequences them; it never
// sees a GPU object, so the same forward runs on either and the two are compared op by op.
//
// Shapes are row-major. An activation holds f32 values [rows, cols]; a weight holds a tensor's stored
// bytes (BF16, F16 or F32, decoded exactly in the kernel) with its shape.

import type { FloatDtype } from '../format/dtype.ts';

/** A tensor as stored in the model folder: little-endian bytes of `dtype`, row-major `shape`. */
export interface StoredTensor {
  name: string;
  dtype: FloatDtype;
  shape: readonly number[];
  bytes: Uint8Array;
}

/** An opaque activation [rows, cols] of f32 (f64 on the CPU reference). */
export interface Act {
  readonly rows: number;
  readonly cols: number;
}

/** An opaque weight on the backend: a stored tensor, kept in its stored dtype. */
export interface Weight {
  readonly name: string;
  readonly dtype: FloatDtype;
  readonly shape: readonly number[];
}

/** How the tokens of several sequences share one activation: rows of each sequence are contiguous. */
export interface SequenceLayout {
  /** Per row: the index of the first row of its sequence. */
  readonly seqStart: Int32Array;
}

export interface AttentionShape {
  heads: number;
  kvHeads: number;
  headDim: number;
  /** Multiplies q·k before the softmax (HF: headDim^-0.5). */
  scale: number;
  /** Keys further back than this many rows are masked (Mistral's sliding window); 0: none. */
  window: number;
}

/**
 * Per scored row, the running log-sum-exp of the logits over the vocabulary chunks seen so far:
 * max m, Σ exp(l − m) s, the logit of the row's target t (when the target lies in a seen chunk),
 * the argmax a (ties: the lowest id) and the second-highest logit m2 (for the near-tie margin).
 */
export interface RowScore {
  /** log softmax(logits)[target], i.e. t − (m + log s); NaN when the row has no target. */
  logprob: Float64Array;
  /** argmax id, ties to the lowest id. */
  argmax: Int32Array;
  /** logit[argmax] − second highest logit (≥ 0): how near the argmax was to a tie. */
  margin: Float64Array;
}

/** An opaque per-row score state on the backend (see RowScore). */
export interface ScoreState {
  readonly rows: number;
}

export interface EvalBackend {
  readonly name: string;
  /** Uploads a stored tensor; its bytes are kept in their dtype and decoded by the ops that read it. */
  weight(tensor: StoredTensor): Promise<Weight>;
  /** Uploads f32 values as an activation [rows, cols] (the embedding rows of the tokens, gathered by the host). */
  upload(values: Float32Array, rows: number, cols: number): Act;

  /** RMSNorm of each row of length `cols`: x / sqrt(mean(x²) + eps) · w (w of length cols). */
  rmsNorm(x: Act, w: Weight, eps: number): Act;
  /**
   * RMSNorm applied to each `dim`-long group of a row (Qwen3's q_norm / k_norm, per head):
   * x [rows, groups·dim], w [dim].
   */
  groupRmsNorm(x: Act, w: Weight, dim: number, eps: number): Act;
  /** x [rows, in] · Wᵀ with W [out, in], plus bias [out] when given: [rows, out]. */
  linear(x: Act, w: Weight, bias?: Weight): Act;
  /**
   * Rotary embedding, HF's rotate_half convention, on each head of x [rows, heads·headDim]: for
   * i < headDim/2, (x_i, x_{i+h}) → (x_i·c − x_{i+h}·s, x_{i+h}·c + x_i·s) with c = cos[row, i],
   * s = sin[row, i] (tables [rows, headDim/2], computed by the host for each row's position).
   */
  rope(x: Act, cos: Float32Array, sin: Float32Array, headDim: number): Act;
  /**
   * Causal attention per sequence: q [rows, heads·headDim], k and v [rows, kvHeads·headDim]; row r
   * attends to rows j of its sequence with seqStart[r] ≤ j ≤ r (and r − j < window when window > 0);
   * query head h reads kv head ⌊h / (heads / kvHeads)⌋. softmax(scale · q·k) · v: [rows, heads·headDim].
   */
  attention(q: Act, k: Act, v: Act, layout: SequenceLayout, shape: AttentionShape): Act;
  /** silu(gate) ⊙ up, element-wise, silu(x) = x / (1 + e^−x). */
  siluMul(gate: Act, up: Act): Act;
  /** a + b, element-wise (the residual stream). */
  add(a: Act, b: Act): Act;
  /** The rows `rows` of x, in that order: [rows.length, cols]. */
  gather(x: Act, rows: Int32Array): Act;

  /** A fresh score state for `rows` rows with per-row targets (−1: none). */
  scoreStart(targets: Int32Array): ScoreState;
  /**
   * Folds one chunk of the output head into the scores: logits = x · Wᵀ for W [chunkRows, cols], the
   * vocabulary ids vocabStart … vocabStart + chunkRows − 1. x [state.rows, cols].
   */
  scoreChunk(state: ScoreState, x: Act, w: Weight, vocabStart: number): void;
  /** The finished scores (reads back from the device). */
  scoreRead(state: ScoreState): Promise<RowScore>;

  /** The values of an activation (reads back; for tests and the host's last steps). */
  read(x: Act): Promise<Float64Array>;
  release(x: Act | Weight | ScoreState): void;
  /** Waits until the work so far has finished (progress, cancellation points). */
  flush(): Promise<void>;
  destroy(): void;
}

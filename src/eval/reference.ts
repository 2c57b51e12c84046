// The f64 reference of every operation of the forward pass (src/eval/backend.ts): plain loops in the
// order the formulas are written, so the WGSL kernels (f32) and the CPU backend are checked against
// something that is easy to read. Shapes are checked up front: a wrong shape is the caller's bug and
// is named, never read past. Inner loops then index with `!`, the shapes having been proven.

/** A row-major matrix [rows, cols] of f64 values. */
export interface Mat {
  readonly rows: number;
  readonly cols: number;
  readonly data: Float64Array;
}

export function mat(data: Float64Array, rows: number, cols: number, what = 'matrix'): Mat {
  if (!Number.isInteger(rows) || !Number.isInteger(cols) || rows < 0 || cols < 0)
    throw new RangeError(`${what}: shape [${rows}, ${cols}] is not a shape`);
  if (data.length !== rows * cols)
    throw new RangeError(`${what}: ${data.length} values for shape [${rows}, ${cols}]`);
  return { rows, cols, data };
}

function expectLength(values: ArrayLike<number>, length: number, what: string): void {
  if (values.length !== length) throw new RangeError(`${what}: ${values.length} values, expected ${length}`);
}

function expectSameShape(a: Mat, b: Mat, what: string): void {
  if (a.rows !== b.rows || a.cols !== b.cols)
    throw new RangeError(`${what}: shapes [${a.rows}, ${a.cols}] and [${b.rows}, ${b.cols}] differ`);
}

/**
 * RMSNorm of each `dim`-long group of every row: x / sqrt(mean(x²) + eps) · w, w of length dim.
 * dim = cols is the ordinary RMSNorm; dim = headDim is Qwen3's per-head q_norm / k_norm.
 */
export function groupRmsNorm(x: Mat, w: ArrayLike<number>, dim: number, eps: number): Mat {
  if (!Number.isInteger(dim) || dim <= 0 || x.cols % dim !== 0)
    throw new RangeError(`rmsNorm: group size ${dim} does not divide the row length ${x.cols}`);
  expectLength(w, dim, 'rmsNorm weight');
  const out = new Float64Array(x.data.length);
  for (let g = 0; g < x.data.length; g += dim) {
    let squares = 0;
    for (let i = 0; i < dim; i++) squares += x.data[g + i]! ** 2;
    const inverse = 1 / Math.sqrt(squares / dim + eps);
    for (let i = 0; i < dim; i++) out[g + i] = x.data[g + i]! * inverse * w[i]!;
  }
  return mat(out, x.rows, x.cols);
}

export function rmsNorm(x: Mat, w: ArrayLike<number>, eps: number): Mat {
  return groupRmsNorm(x, w, x.cols, eps);
}

/** x [rows, in] · Wᵀ for W [out, in] (row-major, as stored), plus bias [out] when given. */
export function linear(x: Mat, w: Mat, bias?: ArrayLike<number>): Mat {
  if (w.cols !== x.cols)
    throw new RangeError(
      `linear: x has ${x.cols} columns but the weight [${w.rows}, ${w.cols}] takes ${w.cols}`,
    );
  if (bias) expectLength(bias, w.rows, 'linear bias');
  const out = new Float64Array(x.rows * w.rows);
  for (let r = 0; r < x.rows; r++)
    for (let o = 0; o < w.rows; o++) {
      let sum = 0;
      for (let k = 0; k < x.cols; k++) sum += x.data[r * x.cols + k]! * w.data[o * w.cols + k]!;
      out[r * w.rows + o] = bias ? sum + bias[o]! : sum;
    }
  return mat(out, x.rows, w.rows);
}

/**
 * Rotary embedding, rotate_half convention, on each head of x [rows, heads·headDim]: for i < h =
 * headDim/2, (x_i, x_{i+h}) → (x_i·c − x_{i+h}·s, x_{i+h}·c + x_i·s) with c, s from the tables
 * [rows, h] at [row, i].
 */
export function rope(x: Mat, cos: ArrayLike<number>, sin: ArrayLike<number>, headDim: number): Mat {
  if (!Number.isInteger(headDim) || headDim <= 0 || headDim % 2 !== 0 || x.cols % headDim !== 0)
    throw new RangeError(`rope: head size ${headDim} must be even and divide the row length ${x.cols}`);
  const half = headDim / 2;
  expectLength(cos, x.rows * half, 'rope cos table');
  expectLength(sin, x.rows * half, 'rope sin table');
  const out = new Float64Array(x.data.length);
  for (let r = 0; r < x.rows; r++)
    for (let head = r * x.cols; head < (r + 1) * x.cols; head += headDim)
      for (let i = 0; i < half; i++) {
        const c = cos[r * half + i]!;
        const s = sin[r * half + i]!;
        const a = x.data[head + i]!;
        const b = x.data[head + i + half]!;
        out[head + i] = a * c - b * s;
        out[head + i + half] = b * c + a * s;
      }
  return mat(out, x.rows, x.cols);
}

export interface AttentionParams {
  heads: number;
  kvHeads: number;
  headDim: number;
  scale: number;
  /** 0: no sliding window. */
  window: number;
}

/** Checks that seqStart describes contiguous sequences: 0 ≤ seqStart[r] ≤ r, constant within one. */
export function checkSeqStart(seqStart: ArrayLike<number>, rows: number): void {
  expectLength(seqStart, rows, 'seqStart');
  for (let r = 0; r < rows; r++) {
    const start = seqStart[r]!;
    const ok = r === start || (start >= 0 && start < r && seqStart[r - 1] === start);
    if (!Number.isInteger(start) || !ok)
      throw new RangeError(
        `seqStart[${r}] = ${start}: a row's sequence must start at it or with the row before`,
      );
  }
}

/** Just the shape of a matrix (an activation of any backend has one). */
export interface Shape2 {
  readonly rows: number;
  readonly cols: number;
}

export function checkAttentionShape(q: Shape2, k: Shape2, v: Shape2, shape: AttentionParams): void {
  const { heads, kvHeads, headDim, window } = shape;
  if (![heads, kvHeads, headDim].every((n) => Number.isInteger(n) && n > 0) || heads % kvHeads !== 0)
    throw new RangeError(`attention: ${heads} heads cannot share ${kvHeads} kv heads of size ${headDim}`);
  if (!Number.isInteger(window) || window < 0) throw new RangeError(`attention: window ${window}`);
  if (q.cols !== heads * headDim)
    throw new RangeError(`attention: q has ${q.cols} columns, ${heads} heads × ${headDim} expected`);
  for (const [name, m] of [
    ['k', k],
    ['v', v],
  ] as const)
    if (m.cols !== kvHeads * headDim || m.rows !== q.rows)
      throw new RangeError(
        `attention: ${name} is [${m.rows}, ${m.cols}], [${q.rows}, ${kvHeads}·${headDim}] expected`,
      );
}

/** The first key row that row r sees: its sequence's start, later under a sliding window. */
export function firstKey(seqStart: number, r: number, window: number): number {
  return window > 0 ? Math.max(seqStart, r - window + 1) : seqStart;
}

/**
 * Causal attention per sequence: row r's query head h attends to the rows j of its sequence with
 * firstKey ≤ j ≤ r, reading kv head ⌊h / (heads / kvHeads)⌋: softmax(scale · q·k) · v.
 */
export function attention(q: Mat, k: Mat, v: Mat, seqStart: ArrayLike<number>, shape: AttentionParams): Mat {
  checkAttentionShape(q, k, v, shape);
  checkSeqStart(seqStart, q.rows);
  const { heads, kvHeads, headDim, scale, window } = shape;
  const group = heads / kvHeads;
  const out = new Float64Array(q.data.length);
  const scores = new Float64Array(q.rows);
  for (let r = 0; r < q.rows; r++) {
    const first = firstKey(seqStart[r]!, r, window);
    for (let h = 0; h < heads; h++) {
      const qo = r * q.cols + h * headDim;
      const kvo = Math.floor(h / group) * headDim;
      let max = -Infinity;
      for (let j = first; j <= r; j++) {
        let dot = 0;
        for (let d = 0; d < headDim; d++) dot += q.data[qo + d]! * k.data[j * k.cols + kvo + d]!;
        scores[j] = scale * dot;
        max = Math.max(max, scores[j]!);
      }
      let total = 0;
      for (let j = first; j <= r; j++) {
        scores[j] = Math.exp(scores[j]! - max);
        total += scores[j]!;
      }
      for (let d = 0; d < headDim; d++) {
        let sum = 0;
        for (let j = first; j <= r; j++) sum += scores[j]! * v.data[j * v.cols + kvo + d]!;
        out[qo + d] = sum / total;
      }
    }
  }
  return mat(out, q.rows, q.cols);
}

/** silu(gate) ⊙ up with silu(x) = x / (1 + e^−x). */
export function siluMul(gate: Mat, up: Mat): Mat {
  expectSameShape(gate, up, 'siluMul');
  const out = gate.data.map((g, i) => (g / (1 + Math.exp(-g))) * up.data[i]!);
  return mat(out, gate.rows, gate.cols);
}

export function add(a: Mat, b: Mat): Mat {
  expectSameShape(a, b, 'add');
  return mat(
    a.data.map((x, i) => x + b.data[i]!),
    a.rows,
    a.cols,
  );
}

/** Rows `rows` of x, in that order. */
export function gather(x: Mat, rows: ArrayLike<number>): Mat {
  const out = new Float64Array(rows.length * x.cols);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    if (!Number.isInteger(r) || r < 0 || r >= x.rows)
      throw new RangeError(`gather: row ${r} is outside [0, ${x.rows})`);
    out.set(x.data.subarray(r * x.cols, (r + 1) * x.cols), i * x.cols);
  }
  return mat(out, rows.length, x.cols);
}

/**
 * Per row, the log-sum-exp of the logits seen so far, kept online over vocabulary chunks: max m,
 * Σ exp(l − m) s, the target's logit t (NaN until its chunk is seen), the argmax (ties: lowest id)
 * and the second-highest logit m2 (equal to m when the maximum is shared).
 */
export interface ScoreRows {
  readonly targets: Int32Array;
  readonly m: Float64Array;
  readonly s: Float64Array;
  readonly t: Float64Array;
  readonly argmax: Int32Array;
  readonly m2: Float64Array;
}

export function scoreStart(targets: Int32Array): ScoreRows {
  const rows = targets.length;
  return {
    targets: Int32Array.from(targets),
    m: new Float64Array(rows).fill(-Infinity),
    s: new Float64Array(rows),
    t: new Float64Array(rows).fill(NaN),
    argmax: new Int32Array(rows).fill(-1),
    m2: new Float64Array(rows).fill(-Infinity),
  };
}

/**
 * Folds the logits [rows, n] of vocabulary ids vocabStart … vocabStart + n − 1 into the state. Chunks
 * may come in any order: a maximum equal to the one held keeps the lower id. NaN logits are skipped.
 */
export function scoreChunk(state: ScoreRows, logits: Mat, vocabStart: number): void {
  if (logits.rows !== state.targets.length)
    throw new RangeError(`score: ${logits.rows} rows of logits for a state of ${state.targets.length} rows`);
  const n = logits.cols;
  for (let r = 0; r < logits.rows; r++) {
    const row = logits.data.subarray(r * n, (r + 1) * n);
    // The chunk's own top two and sum, then one fold: the order a GPU workgroup reduces in.
    let max = -Infinity;
    let arg = -1;
    let second = -Infinity;
    for (let i = 0; i < n; i++) {
      const l = row[i]!;
      if (l > max) {
        second = max;
        max = l;
        arg = vocabStart + i;
      } else if (l > second) second = l;
    }
    if (arg < 0) continue;
    let sum = 0;
    for (let i = 0; i < n; i++) if (!Number.isNaN(row[i]!)) sum += Math.exp(row[i]! - max);
    const target = state.targets[r]! - vocabStart;
    if (target >= 0 && target < n) state.t[r] = row[target]!;

    const m = state.m[r]!;
    if (max > m) {
      state.s[r] = state.s[r]! * Math.exp(m - max) + sum;
      state.m2[r] = Math.max(m, second);
      state.m[r] = max;
      state.argmax[r] = arg;
    } else {
      state.s[r] = state.s[r]! + sum * Math.exp(max - m);
      // max ≤ m: an equal maximum makes m2 = m (a tie), a lower one can only raise m2 to it.
      state.m2[r] = Math.max(state.m2[r]!, max);
      if (max === m) state.argmax[r] = Math.min(state.argmax[r]!, arg);
    }
  }
}

export interface ScoreResult {
  logprob: Float64Array;
  argmax: Int32Array;
  margin: Float64Array;
}

/** logprob = t − (m + log s) (NaN without a target), the argmax and its margin m − m2. */
export function scoreRead(state: ScoreRows): ScoreResult {
  const rows = state.targets.length;
  const logprob = new Float64Array(rows);
  const margin = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    logprob[r] = state.targets[r]! < 0 ? NaN : state.t[r]! - (state.m[r]! + Math.log(state.s[r]!));
    margin[r] = state.m[r]! - state.m2[r]!;
  }
  return { logprob, argmax: Int32Array.from(state.argmax), margin };
}

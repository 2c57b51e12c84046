// The math of a LoRA agent's values, rows at a time (SPEC.md "LoRA / PEFT adapters as agents"): the
// low-rank product (the f64 reference of the GPU kernel), and θ = W + s·(B·A) or DoRA's
// (m / ‖W + s·B·A‖_row) ⊙ (W + s·B·A), each step rounded to f32 where PEFT's f32 merge rounds it.

/**
 * out[i·cols + j] = Σ_k left[i·rank + k] · right[j·rank + k]: x·Wᵀ with x = left [rows, rank] and
 * W = right [cols, rank]. B·A is left = B, right = Aᵀ; (B·A)ᵀ is left = Aᵀ, right = B.
 */
export interface LowRankJob {
  left: Float32Array;
  right: Float32Array;
  rows: number;
  cols: number;
  rank: number;
}

/** The product in f32 (the GPU kernel's, or lowRankF32). */
export type LowRankProduct = (job: LowRankJob) => Promise<Float32Array>;

export function checkLowRankJob({ left, right, rows, cols, rank }: LowRankJob): void {
  for (const [n, what] of [
    [rows, 'rows'],
    [cols, 'cols'],
    [rank, 'rank'],
  ] as const)
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`low-rank product: ${what} ${n} is not a count`);
  if (left.length !== rows * rank || right.length !== cols * rank)
    throw new RangeError(
      `low-rank product: left holds ${left.length} values for ${rows}×${rank}, right ${right.length} for ${cols}×${rank}`,
    );
}

/** The exact-as-f64 product (sums of at most a few hundred f32 products: f64 keeps them nearly exact). */
export function lowRankReference(job: LowRankJob): Float64Array {
  checkLowRankJob(job);
  const { left, right, rows, cols, rank } = job;
  const out = new Float64Array(rows * cols);
  for (let i = 0; i < rows; i++)
    for (let j = 0; j < cols; j++) {
      let sum = 0;
      for (let k = 0; k < rank; k++) sum += (left[i * rank + k] ?? 0) * (right[j * rank + k] ?? 0);
      out[i * cols + j] = sum;
    }
  return out;
}

/** The reference rounded to f32: the CPU engine's product. */
export const lowRankF32: LowRankProduct = (job) => Promise.resolve(Float32Array.from(lowRankReference(job)));

/** One factor's values as [rows, rank] for the product: `matrix` [rows, rank] as it is, or [rank, rows] transposed. */
export function asRows(matrix: Float32Array, rows: number, rank: number, transpose: boolean): Float32Array {
  if (!transpose) return matrix;
  const out = new Float32Array(rows * rank);
  for (let k = 0; k < rank; k++) for (let i = 0; i < rows; i++) out[i * rank + k] = matrix[k * rows + i] ?? 0;
  return out;
}

/**
 * θ for `rows` rows of `cols`: W (f32 values of the weight as the agent starts from) plus s·product,
 * as PEFT's f32 merge rounds it: fround(W + fround(product · s)). With `magnitude` (DoRA, one per
 * row), each row is scaled by fround(m / ‖row‖) after, the norm in f64 then rounded to f32.
 */
export function loraRows(
  weight: ArrayLike<number>,
  product: Float32Array,
  scale: number,
  rows: number,
  cols: number,
  magnitude?: ArrayLike<number>,
): Float32Array {
  const s = Math.fround(scale);
  const out = new Float32Array(rows * cols);
  for (let e = 0; e < rows * cols; e++) out[e] = (weight[e] ?? 0) + Math.fround((product[e] ?? 0) * s);
  if (magnitude)
    for (let i = 0; i < rows; i++) {
      let sum = 0;
      for (let j = 0; j < cols; j++) sum += (out[i * cols + j] ?? 0) ** 2;
      const factor = Math.fround((magnitude[i] ?? 0) / Math.fround(Math.sqrt(sum)));
      for (let j = 0; j < cols; j++) out[i * cols + j] = factor * (out[i * cols + j] ?? 0);
    }
  return out;
}

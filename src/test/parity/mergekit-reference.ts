// What mergekit computes for one tensor, written from its sources (merge_methods/ram.py, linear.py,
// generalized_task_arithmetic.py, sparsify.py) as torch evaluates them: every element-wise op rounded
// to the math dtype (`dtype` of the recipe), sums over the models accumulated in f32 in model order
// and rounded once. It shares no code with the engine: the parity suite's independent oracle.

/** Rounding of the math dtype: Math.fround for float32, to-nearest-even bf16 for bfloat16. */
export type Round = (x: number) => number;

const scratch = new Float32Array(1);
const bits = new Uint32Array(scratch.buffer);

export const roundF32: Round = Math.fround;

export const roundBf16: Round = (x) => {
  scratch[0] = x;
  const u = bits[0]!;
  if ((u & 0x7f800000) === 0x7f800000) return scratch[0]!;
  bits[0] = ((u + 0x7fff + ((u >>> 16) & 1)) & 0xffff0000) >>> 0;
  return scratch[0]!;
};

export interface MergekitTensor {
  base: Float64Array;
  agents: Float64Array[];
}

/** torch `.sum(dim=0)` over the stacked models: f32 accumulation in model order, one final rounding. */
function sum(terms: number[], round: Round): number {
  let acc = 0;
  for (const term of terms) acc = Math.fround(acc + term);
  return round(acc);
}

function taskVectors(v: MergekitTensor, round: Round): number[][] {
  return v.agents.map((agent) => Array.from(agent, (x, i) => round(x - v.base[i]!)));
}

/** `ram` (epsilon) and `ramplus_tl` (r, alpha, epsilon) of ram.py. */
export function mergekitRam(
  v: MergekitTensor,
  round: Round,
  options: { epsilon: number; tl?: { r: number; alpha: number } },
): number[] {
  const tv = taskVectors(v, round);
  const eps = Math.fround(options.epsilon);
  const n = v.base.length;
  const nonzero = tv.map((row) => row.map((x) => Math.abs(x) > eps));
  const counts = Array.from({ length: n }, (_, i) => nonzero.filter((row) => row[i]).length);
  const lambdas = tv.map((_, t) => {
    if (!options.tl) return 1;
    let shared = 0;
    let unique = 0;
    for (let i = 0; i < n; i++) {
      if (!nonzero[t]![i]) continue;
      if (counts[i]! > 1) shared++;
      else if (counts[i] === 1) unique++;
    }
    const rho = Math.fround(shared / Math.max(unique, options.epsilon));
    const clipped = Math.min(Math.max(rho, 0), options.tl.alpha);
    return Math.fround(1 + Math.fround(options.tl.r * clipped));
  });
  return Array.from({ length: n }, (_, i) => {
    const c = counts[i]!;
    const terms = tv.map((row, t) => {
      const z = nonzero[t]![i] ? row[i]! : 0;
      const uniquePart = c === 1 ? round(z * lambdas[t]!) : 0;
      const overlapPart = c > 1 ? round(z / Math.max(c, 1)) : 0;
      return round(uniquePart + overlapPart);
    });
    return round(v.base[i]! + sum(terms, round));
  });
}

/** linear.py: Σ w θ, divided by Σ w when normalising. */
export function mergekitLinear(
  models: Float64Array[],
  weights: number[],
  normalize: boolean,
  round: Round,
): number[] {
  const w = weights.map(round);
  const total = sum(w, round);
  return Array.from(models[0]!, (_, i) => {
    const res = sum(
      models.map((m, t) => round(w[t]! * round(m[i]!))),
      round,
    );
    return normalize ? round(res / total) : res;
  });
}

/** sparsify.py `magnitude` with a STABLE order (lowest index first among equal |δ|); returns the kept indices. */
export function magnitudeKeep(delta: number[], density: number): Uint8Array {
  const keep = new Uint8Array(delta.length);
  if (density >= 1) return keep.fill(1);
  const k = Math.trunc(density * delta.length);
  const order = Array.from(delta, (_, i) => i).sort(
    (a, b) => Math.abs(delta[b]!) - Math.abs(delta[a]!) || a - b,
  );
  for (const i of order.slice(0, k)) keep[i] = 1;
  return keep;
}

/**
 * Entries whose fate depends on the order among equal magnitudes: every |δ| equal to the k-th largest,
 * when only some of them are kept. An unstable argsort (mergekit's) may keep any subset of them.
 */
export function tieDependent(delta: number[], density: number): Uint8Array {
  const out = new Uint8Array(delta.length);
  if (density >= 1) return out;
  const k = Math.trunc(density * delta.length);
  if (k <= 0) return out;
  const sorted = delta.map((x) => Math.abs(x)).sort((a, b) => b - a);
  const threshold = sorted[k - 1]!;
  // Keeping a zero or not changes nothing.
  if (threshold === 0) return out;
  const tied = sorted.filter((x) => x === threshold).length;
  const keptTies = sorted.slice(0, k).filter((x) => x === threshold).length;
  if (keptTies === tied) return out;
  delta.forEach((x, i) => {
    if (Math.abs(x) === threshold) out[i] = 1;
  });
  return out;
}

/**
 * sparsify.py `magnitude_outliers` (Model Breadcrumbs): target_n = int(density·n), n_top = int(gamma·n),
 * n_bot = n − target_n − n_top (where negative, n_top shrinks by it and n_bot is 0), then the ascending
 * order's slice `[n_bot:-n_top]`, which Python makes empty when n_top is 0. Equal |δ| in a stable
 * DESCENDING order (lowest index first, as magnitudeKeep), so ties are counted apart (outlierTies).
 */
export function outliersKeep(delta: number[], density: number, gamma: number): Uint8Array {
  const n = delta.length;
  const keep = new Uint8Array(n);
  if (density >= 1) return keep.fill(1);
  const target = Math.trunc(density * n);
  let top = Math.trunc(gamma * n);
  let bottom = n - target - top;
  if (bottom < 0) {
    top += bottom;
    bottom = 0;
  }
  const ascending = Array.from(delta, (_, i) => i)
    .sort((a, b) => Math.abs(delta[b]!) - Math.abs(delta[a]!) || a - b)
    .reverse();
  // Python: indices[n_bot:-n_top]; -0 is 0, so the slice ends where it starts.
  const end = top === 0 ? 0 : n - top;
  for (const i of ascending.slice(bottom, Math.max(bottom, end))) keep[i] = 1;
  return keep;
}

/** Entries tied at either cut of outliersKeep where only some of the tied are kept: order-dependent. */
export function outlierTies(delta: number[], density: number, gamma: number): Uint8Array {
  const n = delta.length;
  const out = new Uint8Array(n);
  if (density >= 1) return out;
  const target = Math.trunc(density * n);
  const top = Math.min(Math.trunc(gamma * n), n - target);
  const sorted = delta.map((x) => Math.abs(x)).sort((a, b) => b - a);
  for (const cut of [top, top + target]) {
    // A cut between two different magnitudes, or at a zero, splits no tie that matters.
    if (cut <= 0 || cut >= n || sorted[cut - 1] !== sorted[cut] || sorted[cut] === 0) continue;
    const threshold = sorted[cut]!;
    delta.forEach((x, i) => {
      if (Math.abs(x) === threshold) out[i] = 1;
    });
  }
  return out;
}

/** sparsify.py `rescaled_masked_tensor` with the L1 norm. */
export function l1Rescaled(delta: number[], keep: Uint8Array, round: Round): number[] {
  const masked = delta.map((x, i) => (keep[i] ? x : 0));
  let before = 0;
  let after = 0;
  delta.forEach((x, i) => {
    before += Math.abs(x);
    if (keep[i]) after += Math.abs(x);
  });
  const b = Math.fround(before);
  const a = Math.fround(after);
  if (b < 1e-7 || a < 1e-7) return masked;
  const factor = Math.fround(b / a);
  return masked.map((x) => round(x * factor));
}

export interface GtaOptions {
  weights: number[];
  /** Per model: which δ entries the sparsification keeps (absent: all). */
  keep?: (Uint8Array | undefined)[];
  /** Rescale the kept entries to the L1 norm (DARE with rescale: true). */
  l1?: boolean;
  /** TIES sign consensus (`sum`). */
  consensus: boolean;
  normalize: boolean;
}

/** generalized_task_arithmetic.py GTATask.execute, for a mask already drawn. */
export function mergekitGta(v: MergekitTensor, round: Round, o: GtaOptions): number[] {
  const deltas = taskVectors(v, round).map((delta, t) => {
    const keep = o.keep?.[t];
    if (!keep) return delta;
    return o.l1 ? l1Rescaled(delta, keep, round) : delta.map((x, i) => (keep[i] ? x : 0));
  });
  const w = o.weights.map(round);
  return Array.from(v.base, (base, i) => {
    const weighted = deltas.map((d, t) => round(d[i]! * w[t]!));
    let mixed: number;
    let divisor: number;
    if (o.consensus) {
      const majority = sum(weighted, round) >= 0 ? 1 : -1;
      const mask = weighted.map((x) => Math.sign(x) === majority);
      mixed = sum(
        weighted.map((x, t) => (mask[t] ? x : 0)),
        round,
      );
      divisor = sum(
        w.map((x, t) => (mask[t] ? x : 0)),
        round,
      );
      if (divisor === 0) divisor = 1;
    } else {
      mixed = sum(weighted, round);
      divisor = sum(w, round);
      if (Math.abs(divisor) < 1e-8) divisor = 1;
    }
    if (o.normalize) mixed = round(mixed / divisor);
    return round(base + mixed);
  });
}

/**
 * `slerp` of slerp.py for the base (v0) and one model (v1) at t, as numpy evaluates it in float32:
 * each norm and the dot product of the normalised copies summed in f32 (numpy sums pairwise; the
 * order only moves the last bits of the angle), |dot| > 0.9995 → lerp, else the spherical weights from
 * f32 arccos and sin, applied to the unnormalised tensors.
 */
export function mergekitSlerp(v0: Float64Array, v1: Float64Array, t: number, round: Round): number[] {
  const norm = (v: Float64Array): number => {
    let acc = 0;
    for (const x of v) acc = round(acc + round(x * x));
    const n = round(Math.sqrt(acc));
    return n > 1e-8 ? n : 1;
  };
  const n0 = norm(v0);
  const n1 = norm(v1);
  let dot = 0;
  for (let i = 0; i < v0.length; i++) dot = round(dot + round(round(v0[i]! / n0) * round(v1[i]! / n1)));
  const mix = (a: number, b: number): number[] =>
    Array.from(v0, (x, i) => round(round(round(a) * x) + round(round(b) * v1[i]!)));
  if (Math.abs(dot) > 0.9995) return mix(1 - t, t);
  const theta = round(Math.acos(dot));
  const sinTheta = round(Math.sin(theta));
  const thetaT = round(theta * t);
  return mix(round(Math.sin(round(theta - thetaT))) / sinTheta, round(Math.sin(thetaT)) / sinTheta);
}

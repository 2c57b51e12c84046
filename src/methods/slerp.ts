// SLERP (mergekit `slerp`): spherical interpolation from the base (v0) to the one agent (v1) by t, the
// angle taken from the whole tensor's normalised dot product; near-colinear tensors (|dot| > 0.9995)
// are interpolated linearly. The dot product needs the whole tensor before the first merged value: a
// pre-pass of three sums (on the GPU: shaders/slerp_sums.wgsl), then out = a·v0 + b·v1 per element.

/** mergekit's threshold on |dot| above which the two tensors count as colinear (lerp). */
export const SLERP_DOT_THRESHOLD = 0.9995;
/** mergekit's `normalize`: a tensor whose L2 norm is at most this is not divided by it. */
export const SLERP_NORM_EPSILON = 1e-8;

/** Σ v0², Σ v1², Σ v0·v1 over the tensor (v0 the base, v1 the agent). */
export interface SlerpSums {
  base: number;
  agent: number;
  cross: number;
}

export function emptySlerpSums(): SlerpSums {
  return { base: 0, agent: 0, cross: 0 };
}

/**
 * Adds one window of the base and the agent into `sums`, in f64. Elements where either holds NaN or
 * ±Inf are left out: where both hold the same bits the element is kept as it is, and where they differ
 * the merge fails (SPEC.md "Non-finite values"), so they would only turn every coefficient into NaN.
 */
export function accumulateSlerpSums(
  sums: SlerpSums,
  base: ArrayLike<number>,
  agent: ArrayLike<number>,
): void {
  let b = 0;
  let a = 0;
  let c = 0;
  for (let i = 0; i < base.length; i++) {
    const x = base[i]!;
    const y = agent[i]!;
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    b += x * x;
    a += y * y;
    c += x * y;
  }
  sums.base += b;
  sums.agent += a;
  sums.cross += c;
}

/** out = base·v0 + agent·v1; `lerp` where the tensors were colinear. */
export interface SlerpCoefficients {
  base: number;
  agent: number;
  lerp: boolean;
  /** The normalised dot product the choice was made on. */
  dot: number;
}

/** mergekit's `slerp(t, v0, v1)` coefficients from the sums of the whole tensor. */
export function slerpCoefficients(sums: SlerpSums, t: number): SlerpCoefficients {
  if (!Number.isFinite(t)) throw new RangeError(`slerp t must be a finite number, got ${t}`);
  const norm = (squares: number): number => {
    const n = Math.sqrt(squares);
    return n > SLERP_NORM_EPSILON ? n : 1;
  };
  const dot = sums.cross / (norm(sums.base) * norm(sums.agent));
  if (!Number.isFinite(dot)) throw new RangeError(`slerp: the tensor's dot product is ${dot}`);
  if (Math.abs(dot) > SLERP_DOT_THRESHOLD) return { base: 1 - t, agent: t, lerp: true, dot };
  const theta = Math.acos(dot);
  const sinTheta = Math.sin(theta);
  const thetaT = theta * t;
  return { base: Math.sin(theta - thetaT) / sinTheta, agent: Math.sin(thetaT) / sinTheta, lerp: false, dot };
}

/** The merged tensor (f64) of a base and one agent, whole. */
export function slerpMerge(base: ArrayLike<number>, agent: ArrayLike<number>, t: number): Float64Array {
  const sums = emptySlerpSums();
  accumulateSlerpSums(sums, base, agent);
  return slerpApply(base, agent, slerpCoefficients(sums, t));
}

/** One window of the merge, given the whole tensor's coefficients. */
export function slerpApply(
  base: ArrayLike<number>,
  agent: ArrayLike<number>,
  k: Pick<SlerpCoefficients, 'base' | 'agent'>,
): Float64Array {
  return Float64Array.from({ length: base.length }, (_, i) => k.base * base[i]! + k.agent * agent[i]!);
}

/** SLERP interpolates between exactly two models: the base and one agent (mergekit refuses more). */
export function slerpAgentsProblem(agents: number): string | undefined {
  return agents === 1
    ? undefined
    : `slerp merges the base with exactly one agent (mergekit's slerp takes two models); ${agents} agents given`;
}

// Pipeline module of shaders/eval/score.wgsl: folds a chunk of logits into each row's online
// log-sum-exp, argmax and second maximum (CPU reference: scoreChunk in src/eval/reference.ts), and
// the host side of its per-row state: the initial words and the RowScore read from them.

import source from '../../../../shaders/eval/score.wgsl?raw';
import type { KernelRequest, KernelSpec } from '../../../engine/gpu/kernels/kernel.ts';
import type { RowScore } from '../../backend.ts';

/** Bytes of one RowState of the shader: m, s, t, m2 (f32), argmax, target (i32), seen, pad (u32). */
export const SCORE_STATE_BYTES = 32;
/** The shader's LOWEST: the lowest finite f32, "no logit yet". */
const LOWEST = -3.4028234663852886e38;

export const EVAL_SCORE_KERNEL: KernelSpec = {
  name: 'eval_score',
  sources: [source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'logits', type: 'read-only-storage' },
    { binding: 2, name: 'state', type: 'storage' },
  ],
  constants: [],
};

export function evalScoreRequest(): KernelRequest {
  return { spec: EVAL_SCORE_KERNEL, constants: {} };
}

/** The state before any chunk: nothing seen, t NaN, argmax −1. */
export function initialScoreState(targets: Int32Array): ArrayBuffer {
  const bytes = new ArrayBuffer(Math.max(1, targets.length) * SCORE_STATE_BYTES);
  const view = new DataView(bytes);
  targets.forEach((target, r) => {
    if (!Number.isInteger(target) || target < -1)
      throw new RangeError(`scoreStart: target ${target} of row ${r} is not a vocabulary id or −1`);
    const o = r * SCORE_STATE_BYTES;
    view.setFloat32(o, LOWEST, true);
    view.setFloat32(o + 4, 0, true);
    view.setFloat32(o + 8, NaN, true);
    view.setFloat32(o + 12, LOWEST, true);
    view.setInt32(o + 16, -1, true);
    view.setInt32(o + 20, target, true);
  });
  return bytes;
}

/** logprob = t − (m + log s) in f64 from the f32 state; margin m − m2 (LOWEST read as −∞). */
export function readScoreState(bytes: ArrayBuffer, rows: number): RowScore {
  const view = new DataView(bytes);
  const logprob = new Float64Array(rows);
  const argmax = new Int32Array(rows);
  const margin = new Float64Array(rows);
  const real = (x: number) => (x <= LOWEST ? -Infinity : x);
  for (let r = 0; r < rows; r++) {
    const o = r * SCORE_STATE_BYTES;
    const m = real(view.getFloat32(o, true));
    const s = view.getFloat32(o + 4, true);
    const t = view.getFloat32(o + 8, true);
    const m2 = real(view.getFloat32(o + 12, true));
    logprob[r] = view.getInt32(o + 20, true) < 0 ? NaN : t - (m + Math.log(s));
    argmax[r] = view.getInt32(o + 16, true);
    margin[r] = m - m2;
  }
  return { logprob, argmax, margin };
}

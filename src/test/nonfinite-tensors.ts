// Test inputs for SPEC.md "Non-finite values": random tensors with NaN (several payloads), +Inf and
// −Inf written into chosen models at chosen elements, with the expected counts known by construction
// (not computed by the code under test).

import { decodeFloats, type FloatDtype } from '../format/dtype.ts';
import { seededRandom } from '../methods/rng.ts';
import { tensorInput } from '../methods/tensors.ts';
import type { TestTensor } from './tensors.ts';

export type Special = 'nan' | 'nan2' | 'inf' | '-inf';

/** Stored bit patterns of each special value; the two NaNs differ only in their payload. */
export const SPECIAL_BITS: Record<FloatDtype, Record<Special, number>> = {
  F32: { nan: 0x7fc00001, nan2: 0x7fc00002, inf: 0x7f800000, '-inf': 0xff800000 },
  BF16: { nan: 0x7fc1, nan2: 0x7fc2, inf: 0x7f80, '-inf': 0xff80 },
  F16: { nan: 0x7e01, nan2: 0x7e02, inf: 0x7c00, '-inf': 0xfc00 },
};

/** A third NaN payload, for a second holder of one element: never the same bits as the first. */
const NAN3: Record<FloatDtype, number> = { F32: 0x7fc00003, BF16: 0x7fc3, F16: 0x7e03 };

const SPECIALS: Special[] = ['nan', 'nan2', 'inf', '-inf'];

export interface NonFiniteSpec {
  /** Elements where some models get a special value and the others keep theirs: non-finite. */
  differ: number;
  /** Elements where every model (base included) gets one special value: unchanged, kept. */
  kept: number;
  /** The models (0 = base) that may get the differing values; linear merges see only agents. */
  models: readonly number[];
  seed: number;
}

export interface Injected extends TestTensor {
  /** Expected non-finite count and, base first, the per-model counts. */
  nonFinite: number;
  perModel: number[];
  /** The non-finite elements. */
  differAt: Set<number>;
  /** The kept elements and the special each holds. */
  kept: Map<number, Special>;
}

function writeBits(bytes: Uint8Array, dtype: FloatDtype, i: number, bits: number): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dtype === 'F32') view.setUint32(i * 4, bits, true);
  else view.setUint16(i * 2, bits, true);
}

/** A copy of `t` with specials written in; needs differ + kept ≤ numel. */
export function injectNonFinite(t: TestTensor, spec: NonFiniteSpec): Injected {
  const { dtype } = t.values;
  const n = t.values.base.length;
  const random = seededRandom(spec.seed);
  const pick = <T>(from: readonly T[]): T => from[Math.floor(random() * from.length)]!;
  const bytes = t.bytes.map((b) => b.slice());
  // Distinct elements: a partial Fisher-Yates shuffle.
  const order = Array.from({ length: n }, (_, i) => i);
  for (let k = 0; k < spec.differ + spec.kept; k++) {
    const j = k + Math.floor(random() * (n - k));
    [order[k], order[j]] = [order[j]!, order[k]!];
  }
  const perModel = new Array<number>(bytes.length).fill(0);
  for (const i of order.slice(0, spec.differ)) {
    const m = pick(spec.models);
    writeBits(bytes[m]!, dtype, i, SPECIAL_BITS[dtype][pick(SPECIALS)]);
    perModel[m]!++;
    // Now and then a second model gets a NaN with another payload: still one element, two holders.
    const other = pick(spec.models);
    if (other !== m && random() < 0.3) {
      writeBits(bytes[other]!, dtype, i, NAN3[dtype]);
      perModel[other]!++;
    }
  }
  const kept = new Map<number, Special>();
  for (const i of order.slice(spec.differ, spec.differ + spec.kept)) {
    const special = pick(SPECIALS);
    kept.set(i, special);
    for (const b of bytes) writeBits(b, dtype, i, SPECIAL_BITS[dtype][special]);
  }
  const decoded = bytes.map((b) => decodeFloats(dtype, b, n));
  const bits = bytes.map((b) =>
    dtype === 'F32'
      ? new Uint32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength))
      : new Uint16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)),
  );
  return {
    values: { name: t.values.name, dtype, base: decoded[0]!, agents: decoded.slice(1), bits },
    bytes,
    input: tensorInput(t.values.name, dtype, bytes),
    nonFinite: spec.differ,
    perModel,
    differAt: new Set(order.slice(0, spec.differ)),
    kept,
  };
}

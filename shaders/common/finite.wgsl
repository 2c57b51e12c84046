// Non-finite values (SPEC.md "Non-finite values") for the element-wise merges, on bit patterns only:
// WGSL lets an implementation assume floats are finite, so NaN and ±Inf are told by their all-ones
// exponent, never by float comparisons. Where every input holds the same bits the element is kept as
// it is, finite or not; where the bits differ and one is NaN or ±Inf, or a finite merge overflows to ±Inf in the
// output dtype, the element is counted in `flags` and the host fails the tensor.
//
// flags layout (src/engine/kernels/merge-bindings.ts mirrors it):
//   0          non-finite elements
//   1          finite elements whose merged value overflowed to ±Inf (or came out NaN)
//   2 + m      non-finite elements where model m (0 = base, t + 1 = agent t) holds NaN or ±Inf

@group(0) @binding(5) var<storage, read_write> flags: array<atomic<u32>>;

const FLAG_NON_FINITE: u32 = 0u;
const FLAG_OVERFLOW: u32 = 1u;
const FLAG_MODELS: u32 = 2u;

const EXPONENT: u32 = 0x7f800000u;

// What the inputs of one element pair hold, kept as plain values (not private variables, which
// SwiftShader keeps in memory): the reference bits (the base, or agent 0 for linear), the least of
// the inputs' missing exponent bits (0 where some input is NaN or ±Inf), and the OR of every input's
// difference from the reference (0 where all hold the same bits).
struct Scan {
  first: u32,
  reference: vec2<u32>,
  least: vec2<u32>,
  diff: vec2<u32>,
}

// What an element-wise merge kernel's merged_pair returns.
struct Merged {
  bits: vec2<u32>,
  scan: Scan,
}

fn special(bits: vec2<u32>) -> vec2<bool> {
  return (bits & vec2<u32>(EXPONENT)) == vec2<u32>(EXPONENT);
}

// Starts the scan of a pair at input slot `slot` (0 = base) with that slot's f32 bits.
fn scan_start(slot: u32, bits: vec2<u32>) -> Scan {
  return Scan(slot, bits, ~bits & vec2<u32>(EXPONENT), vec2<u32>(0u));
}

// Adds one more input's f32 bits to the scan.
fn scan_add(s: Scan, bits: vec2<u32>) -> Scan {
  return Scan(s.first, s.reference, min(s.least, ~bits & vec2<u32>(EXPONENT)), s.diff | (bits ^ s.reference));
}

// The whole scan of pair p, for kernels that load their inputs per element.
fn scan_inputs(slot: u32, p: u32) -> Scan {
  var s = scan_start(slot, load_pair_bits(slot, p));
  for (var t = slot; t < AGENTS; t++) {
    s = scan_add(s, load_pair_bits(t + 1u, p));
  }
  return s;
}

// Rare path: counts the bad lanes of pair p, per model for the non-finite ones.
fn count_bad(p: u32, first: u32, non_finite: vec2<bool>, overflow: vec2<bool>) {
  atomicAdd(&flags[FLAG_NON_FINITE], countOneBits(select(0u, 1u, non_finite.x) | select(0u, 2u, non_finite.y)));
  atomicAdd(&flags[FLAG_OVERFLOW], countOneBits(select(0u, 1u, overflow.x) | select(0u, 2u, overflow.y)));
  for (var m = first; m <= AGENTS; m++) {
    let hit = non_finite & special(load_pair_bits(m, p));
    let n = countOneBits(select(0u, 1u, hit.x) | select(0u, 2u, hit.y));
    if (n != 0u) {
      atomicAdd(&flags[FLAG_MODELS + m], n);
    }
  }
}

// The output bits of pair p in OUT_DTYPE (16-bit values in the low half of each lane) from the
// kernel's merged f32 bits: elements whose inputs all hold the same bits are kept as those bits
// (NaN, ±Inf, −0.0 and subnormals included, which float arithmetic may turn into others: a GPU may
// flush subnormals, and −0 + 0 is +0), and bad lanes among `valid` are counted.
fn finish_pair(p: u32, merged: vec2<u32>, s: Scan, valid: vec2<bool>) -> vec2<u32> {
  let any_special = s.least == vec2<u32>(0u);
  let differs = s.diff != vec2<u32>(0u);
  let bits = select(merged, s.reference, !differs);
  let out = encode_pair(bits);
  var out_special = special(bits);
  if (OUT_DTYPE == DTYPE_BF16) {
    out_special = (out & vec2<u32>(0x7f80u)) == vec2<u32>(0x7f80u);
  } else if (OUT_DTYPE == DTYPE_F16) {
    out_special = (out & vec2<u32>(0x7c00u)) == vec2<u32>(0x7c00u);
  }
  let non_finite = valid & any_special & differs;
  let overflow = valid & out_special & !any_special;
  if (any(non_finite | overflow)) {
    count_bad(p, s.first, non_finite, overflow);
  }
  return out;
}

// Non-finite values (SPEC.md "Non-finite values") for the element-wise merges, on bit patterns only:
// WGSL lets an implementation assume floats are finite, so NaN and ±Inf are told by their all-ones
// exponent, never by float comparisons. Where every input holds the same bits the element is kept as
// it is; where the bits differ and one is NaN or ±Inf, or a finite merge overflows to ±Inf in the
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

// Per element of the pair being merged: the inputs' reference bits (the base, or agent 0 for linear),
// whether any input is NaN or ±Inf, and whether any input's bits differ from the reference.
var<private> first_slot: u32;
var<private> reference_bits: vec2<u32>;
var<private> any_special: vec2<bool>;
var<private> differs: vec2<bool>;

fn special(bits: vec2<u32>) -> vec2<bool> {
  return (bits & vec2<u32>(0x7f800000u)) == vec2<u32>(0x7f800000u);
}

// Starts the scan of pair p at input slot `slot` (0 = base); returns that slot's f32 bits.
fn scan_first(slot: u32, p: u32) -> vec2<u32> {
  let bits = load_pair_bits(slot, p);
  first_slot = slot;
  reference_bits = bits;
  any_special = special(bits);
  differs = vec2<bool>(false);
  return bits;
}

// Adds input slot `slot` to the scan of pair p; returns its f32 bits.
fn scan_next(slot: u32, p: u32) -> vec2<u32> {
  let bits = load_pair_bits(slot, p);
  any_special = any_special | special(bits);
  differs = differs | (bits != reference_bits);
  return bits;
}

// The whole scan of pair p, for kernels that load their inputs per element.
fn scan_inputs(slot: u32, p: u32) {
  _ = scan_first(slot, p);
  for (var t = slot; t < AGENTS; t++) {
    _ = scan_next(t + 1u, p);
  }
}

// Rare path: counts the bad lanes of pair p, per model for the non-finite ones.
fn count_bad(p: u32, non_finite: vec2<bool>, overflow: vec2<bool>) {
  atomicAdd(&flags[FLAG_NON_FINITE], countOneBits(select(0u, 1u, non_finite.x) | select(0u, 2u, non_finite.y)));
  atomicAdd(&flags[FLAG_OVERFLOW], countOneBits(select(0u, 1u, overflow.x) | select(0u, 2u, overflow.y)));
  for (var m = first_slot; m <= AGENTS; m++) {
    let hit = non_finite & special(load_pair_bits(m, p));
    let n = countOneBits(select(0u, 1u, hit.x) | select(0u, 2u, hit.y));
    if (n != 0u) {
      atomicAdd(&flags[FLAG_MODELS + m], n);
    }
  }
}

// The output bits of pair p in OUT_DTYPE (16-bit values in the low half of each lane) from the
// kernel's merged f32 bits: elements whose inputs all hold the same non-finite bits are kept, and
// bad lanes among `valid` are counted.
fn finish_pair(p: u32, merged: vec2<u32>, valid: vec2<bool>) -> vec2<u32> {
  let bits = select(merged, reference_bits, any_special & !differs);
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
    count_bad(p, non_finite, overflow);
  }
  return out;
}

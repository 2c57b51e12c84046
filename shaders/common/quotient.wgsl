// f32 division rounded to nearest even, as IEEE 754, PyTorch (mergekit) and the CPU reference divide.
// WGSL lets f32 division be off by 2.5 ulp, and a real GPU takes that: NVIDIA's Vulkan driver divides
// through a reciprocal. The GPU's quotient q0 is corrected with integer arithmetic alone. For a normal
// a and b, with mantissas A and B (24 bits, A doubled when A < B so that A/B is in [1, 2)), the wanted
// mantissa is Q = round(A·2^23 / B) in [2^23, 2^24]. Near Q, the remainder r = A·2^23 − Q·B is small
// (|r| < 2^31 while Q is within 2^7 units of the truth), so wrapping 32-bit arithmetic gives it
// exactly. Steps of ±1 bring 0 ≤ r < B (q0 is a few ulp off at most), then r against B/2 rounds.
// Zeros, infinities, NaNs, subnormal operands and quotients outside the normal range keep q0.

// Off where the device's own division proved exact (src/engine/division.ts), as on SwiftShader: there
// the correction would only cost time.
override CORRECT_DIVISION: bool = true;

// How many unit steps the correction takes at most, each way: WGSL's 2.5 ulp and one for the clamp.
const QUOTIENT_STEPS: u32 = 4u;

fn corrected_quotient(a: f32, b: f32, q0: f32) -> f32 {
  let ab = bitcast<u32>(a);
  let bb = bitcast<u32>(b);
  let ea = (ab >> 23u) & 0xffu;
  let eb = (bb >> 23u) & 0xffu;
  let mb = (bb & 0x7fffffu) | 0x800000u;
  var ma = (ab & 0x7fffffu) | 0x800000u;
  // The quotient's biased exponent; one less when A < B (A is doubled instead).
  let doubled = ma < mb;
  ma = select(ma, ma << 1u, doubled);
  var e = i32(ea) - i32(eb) + select(127, 126, doubled);
  // q0's mantissa at exponent e; where q0 rounded across a power of two, the nearest end of the range.
  let qb = bitcast<u32>(q0);
  let eq = i32((qb >> 23u) & 0xffu);
  var q = select(select(0x800000u, 0xffffffu, eq > e), (qb & 0x7fffffu) | 0x800000u, eq == e);
  var r = bitcast<i32>((ma << 23u) - q * mb);
  let step = i32(mb);
  for (var i = 0u; i < QUOTIENT_STEPS; i++) {
    let low = r < 0;
    let high = r >= step;
    q = q + select(0u, 1u, high) - select(0u, 1u, low);
    r = r + select(0, step, low) - select(0, step, high);
  }
  // Now q = floor(A·2^23 / B) and r its remainder: round to nearest, ties to even.
  q += select(0u, 1u, 2 * r > step || (2 * r == step && (q & 1u) == 1u));
  let carry = q == 0x1000000u;
  e += select(0, 1, carry);
  let exact = ((ab ^ bb) & 0x80000000u) | (u32(e) << 23u) | (q & 0x7fffffu);
  // Without branches (SwiftShader runs a branch's lanes apart): q0 where the operands or the quotient
  // are not normal numbers.
  let normal = ea - 1u < 0xfeu && eb - 1u < 0xfeu && e > 0 && e < 0xff;
  return select(q0, bitcast<f32>(exact), normal);
}

// a / b correctly rounded, per lane.
fn exact_quotient(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let q0 = a / b;
  if (!CORRECT_DIVISION) {
    return q0;
  }
  return vec2<f32>(corrected_quotient(a.x, b.x, q0.x), corrected_quotient(a.y, b.y, q0.y));
}

// f32 division rounded to nearest even, as IEEE 754, PyTorch (mergekit) and the CPU reference divide.
// WGSL lets f32 division be off by 2.5 ulp, and a real GPU takes that: NVIDIA's Vulkan driver divides
// through a reciprocal, and an H200 returned quotients near 0 for divisors above 2^126 (whose
// reciprocal is subnormal, flushed to 0). So the quotient is worked out with integer arithmetic from
// the operands' mantissas A and B (24 bits; A doubled when A < B, so that A/B is in [1, 2)): the wanted
// mantissa is Q = round(A·2^23 / B) in [2^23, 2^24]. The GPU divides only f32(A) / f32(B), far from
// the range's ends, for a first guess a few units off. Near Q the remainder r = A·2^23 − Q·B is small
// (|r| < 2^31 while the guess is within 2^7 units), so wrapping 32-bit arithmetic gives it exactly.
// Steps of ±1 bring 0 ≤ r < B, then r against B/2 rounds. Zeros, infinities, NaNs, subnormal operands
// and quotients outside the normal range keep the GPU's own a / b.

// Off where the device's own division proved exact (src/engine/division.ts), as on SwiftShader: there
// the correction would only cost time.
override CORRECT_DIVISION: bool = true;

// Unit steps the correction takes at most, each way: the guess is within WGSL's 2.5 ulp, plus one
// where it was clamped; the rest is margin (the tests push the guess up to 3 units further off).
const QUOTIENT_STEPS: u32 = 8u;

// `fallback`: the GPU's a / b, kept where the operands or the quotient are not normal numbers.
// `nudge`: units added to the first guess (0, except where the tests push it off).
fn corrected_quotient(a: f32, b: f32, fallback: f32, nudge: i32) -> f32 {
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
  // The guess: f32(A) / f32(B) in [1, 2) give or take an ulp (both exact as f32); the nearest end
  // where it rounded out of the range.
  let g = bitcast<u32>(f32(ma) / f32(mb));
  let eg = (g >> 23u) & 0xffu;
  var q = select(select(0x800000u, 0xffffffu, eg > 127u), (g & 0x7fffffu) | 0x800000u, eg == 127u);
  q = bitcast<u32>(bitcast<i32>(q) + nudge);
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
  // Without branches (SwiftShader runs a branch's lanes apart).
  let normal = ea - 1u < 0xfeu && eb - 1u < 0xfeu && e > 0 && e < 0xff;
  return select(fallback, bitcast<f32>(exact), normal);
}

// a / b correctly rounded, per lane.
fn exact_quotient(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let q0 = a / b;
  if (!CORRECT_DIVISION) {
    return q0;
  }
  return vec2<f32>(corrected_quotient(a.x, b.x, q0.x, 0), corrected_quotient(a.y, b.y, q0.y, 0));
}

// Exact conversions between the stored float formats and f32 bit patterns, in u32 integer ops only:
// SwiftShader has no shader-f16, and pack2x16float's rounding and subnormal handling are not pinned down.

const DTYPE_F32: u32 = 0u;
const DTYPE_BF16: u32 = 1u;
const DTYPE_F16: u32 = 2u;

// bf16 is the upper half of an f32, so widening is a shift.
fn bf16_to_f32_bits(h: u32) -> u32 {
  return (h & 0xffffu) << 16u;
}

// Round to nearest even; a NaN stays a NaN (quiet bit forced), exactly as src/format/dtype.ts does.
fn f32_bits_to_bf16(x: u32) -> u32 {
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return ((x >> 16u) | 0x0040u) & 0xffffu;
  }
  return ((x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u) & 0xffffu;
}

// Exact widening of IEEE half bits; half subnormals become normal f32s, NaN payloads are kept.
fn f16_to_f32_bits(h: u32) -> u32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0x1fu) {
    return sign | 0x7f800000u | (m << 13u);
  }
  if (e == 0u) {
    if (m == 0u) {
      return sign;
    }
    // Normalise: move the leading one of the 10-bit mantissa to the implicit position.
    let top = 31u - countLeadingZeros(m);
    let shift = 10u - top;
    return sign | ((113u - shift) << 23u) | (((m << shift) & 0x3ffu) << 13u);
  }
  return sign | ((e + 112u) << 23u) | (m << 13u);
}

// Round to nearest even, overflow to ±Inf, tiny values to subnormals or ±0, NaN to 0x7e00 (dtype.ts).
fn f32_bits_to_f16(x: u32) -> u32 {
  let sign = (x >> 16u) & 0x8000u;
  let a = x & 0x7fffffffu;
  if (a > 0x7f800000u) {
    return 0x7e00u;
  }
  // 65520 is the midpoint between 65504 (odd mantissa) and the next power of two: ties go to Inf.
  if (a >= 0x477ff000u) {
    return sign | 0x7c00u;
  }
  if (a >= 0x38800000u) {
    // A mantissa carry ripples into the exponent, which is what rounding up across a binade needs.
    let r = a + 0x0fffu + ((a >> 13u) & 1u);
    return sign | ((r >> 13u) - 0x1c000u);
  }
  let e = a >> 23u;
  if (e < 102u) {
    return sign;
  }
  // Subnormal half: the value in units of 2^-24 is the full mantissa shifted right, rounded half to even.
  let m = (a & 0x7fffffu) | 0x800000u;
  let shift = 126u - e;
  return sign | ((m + (1u << (shift - 1u)) - 1u + ((m >> shift) & 1u)) >> shift);
}

fn decode16(dtype: u32, h: u32) -> u32 {
  if (dtype == DTYPE_BF16) {
    return bf16_to_f32_bits(h);
  }
  return f16_to_f32_bits(h);
}

fn encode16(dtype: u32, x: u32) -> u32 {
  if (dtype == DTYPE_BF16) {
    return f32_bits_to_bf16(x);
  }
  return f32_bits_to_f16(x);
}

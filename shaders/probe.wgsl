// GPU self-test kernel: result = bf16(widen(a) * scale + widen(b)) for two bf16 streams stored two
// per u32 word (low half first), the same packing and codecs the merge kernels use.

override WORKGROUP_SIZE: u32 = 64u;

struct Params {
  // A bf16-representable factor, so widen(a) * scale is exact in f32 and fusing into an fma or not
  // gives the same bits.
  scale: f32,
  // Number of bf16 elements; the upper half of the last word is padding when it is odd.
  count: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> result: array<u32>;

// bf16 is the upper half of an f32: widening is exact.
fn widen(bits: u32) -> f32 {
  return bitcast<f32>(bits << 16u);
}

// f32 to bf16 bits, round to nearest, ties to even; NaN stays a quiet NaN.
fn narrow(x: f32) -> u32 {
  let bits = bitcast<u32>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return ((bits >> 16u) | 0x40u) & 0xffffu;
  }
  return ((bits + 0x7fffu + ((bits >> 16u) & 1u)) >> 16u) & 0xffffu;
}

fn combine(lane_a: u32, lane_b: u32) -> u32 {
  return narrow(widen(lane_a) * params.scale + widen(lane_b));
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let word = id.x;
  if (word >= arrayLength(&result)) {
    return;
  }
  let wa = a[word];
  let wb = b[word];
  let low = combine(wa & 0xffffu, wb & 0xffffu);
  var high = 0u;
  if (word * 2u + 1u < params.count) {
    high = combine(wa >> 16u, wb >> 16u);
  }
  result[word] = low | (high << 16u);
}

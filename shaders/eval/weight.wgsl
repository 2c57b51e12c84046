// Element access of the `weight` binding (declared by the kernel) in its stored dtype W_DTYPE: F32 as
// words, BF16/F16 packed two per u32 word (element 2i in the low half, little-endian), decoded
// exactly with the integer codecs of shaders/common/codec.wgsl (no shader-f16 on SwiftShader).

override W_DTYPE: u32 = 0u;

fn weight_at(e: u32) -> f32 {
  if (W_DTYPE == DTYPE_F32) {
    return bitcast<f32>(weight[e]);
  }
  let word = weight[e >> 1u];
  return bitcast<f32>(decode16(W_DTYPE, (word >> ((e & 1u) * 16u)) & 0xffffu));
}

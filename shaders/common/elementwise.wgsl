// Entry point of the element-wise merges: one invocation per element pair (2p, 2p+1), which is one
// output word of a 16-bit output (so no two invocations write one word; the pad half of an odd last
// element is written as 0) and two words of an f32 output. The kernel file defines
// merged_pair(p): the f32 bits of the two merged elements (the second ignored past the window's end).

@group(0) @binding(2) var<storage, read_write> output: array<u32>;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  let p = group * WORKGROUP + lid;
  let e = 2u * p;
  if (e >= params.count) {
    return;
  }
  let merged = merged_pair(p);
  let both = e + 1u < params.count;
  if (OUT_DTYPE == DTYPE_F32) {
    output[e] = merged.x;
    if (both) {
      output[e + 1u] = merged.y;
    }
    return;
  }
  let hi = select(0u, encode16(OUT_DTYPE, merged.y), both);
  output[p] = encode16(OUT_DTYPE, merged.x) | (hi << 16u);
}

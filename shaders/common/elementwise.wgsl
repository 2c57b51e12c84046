// Entry point of the element-wise merges: one invocation per element pair (2p, 2p+1), which is one
// output word of a 16-bit output (so no two invocations write one word; the pad half of an odd last
// element is written as 0) and two words of an f32 output. The kernel file defines
// merged_pair(p): the f32 bits of the two merged elements (the second ignored past the window's end)
// and the Scan of their inputs; finish_pair (common/finite.wgsl for the merges) turns them into
// output bits.

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
  let both = e + 1u < params.count;
  let m = merged_pair(p);
  let out = finish_pair(p, m.bits, m.scan, vec2<bool>(true, both));
  if (OUT_DTYPE == DTYPE_F32) {
    output[e] = out.x;
    if (both) {
      output[e + 1u] = out.y;
    }
    return;
  }
  output[p] = out.x | (select(0u, out.y, both) << 16u);
}

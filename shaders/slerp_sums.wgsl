// SLERP's sums over a window: sum v0^2, sum v1^2 and sum v0*v1 of the base (v0) and the one agent
// (v1). SUM_GROUPS workgroups stride over the window; each adds its invocations' partial sums in
// workgroup memory and writes three f32 to `norms`; the host adds them in f64. Elements where either
// value is NaN or +-Inf are left out (kept as they are, or the merge fails). CPU reference:
// accumulateSlerpSums in src/methods/slerp.ts.

const SUM_GROUPS: u32 = 16u;

@group(0) @binding(4) var<storage, read_write> norms: array<f32>;

var<workgroup> partial: array<vec3<f32>, WORKGROUP>;

fn finite_bits(bits: u32) -> bool {
  return (bits & 0x7f800000u) != 0x7f800000u;
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= SUM_GROUPS) {
    return;
  }
  var sums = vec3<f32>(0.0);
  for (var e = group * WORKGROUP + lid; e < params.count; e += SUM_GROUPS * WORKGROUP) {
    let a = load_bits(0u, e);
    let b = load_bits(1u, e);
    if (finite_bits(a) && finite_bits(b)) {
      let x = bitcast<f32>(a);
      let y = bitcast<f32>(b);
      sums += vec3<f32>(x * x, y * y, x * y);
    }
  }
  partial[lid] = sums;
  workgroupBarrier();
  for (var half = WORKGROUP / 2u; half > 0u; half >>= 1u) {
    if (lid < half) {
      partial[lid] += partial[lid + half];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let s = partial[0];
    norms[group * 3u] = s.x;
    norms[group * 3u + 1u] = s.y;
    norms[group * 3u + 2u] = s.z;
  }
}

// DELLA's L1 norms for mergekit's rescale rule: per agent, the sum of |tau| over the window and over
// the entries della_mask.wgsl kept (factor != 0, its factors 1 in this pass). NORM_GROUPS workgroups
// stride over the window and every invocation writes its own partial sums per agent, as
// dare_norms.wgsl does; the host adds them in f64. CPU reference: accumulateDellaNorms in
// src/methods/della.ts.

const NORM_GROUPS: u32 = 16u;

@group(0) @binding(4) var<storage, read_write> norms: array<f32>;
@group(0) @binding(5) var<storage, read> della_factors: array<u32>;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= NORM_GROUPS) {
    return;
  }
  let invocation = group * WORKGROUP + lid;
  for (var t = 0u; t < AGENTS; t++) {
    var before = 0.0;
    var after = 0.0;
    for (var e = invocation; e < params.count; e += NORM_GROUPS * WORKGROUP) {
      let magnitude = abs(tau(t, e, load(0u, e)));
      before += magnitude;
      if (della_factors[t * params.count + e] != 0u) {
        after += magnitude;
      }
    }
    norms[(invocation * AGENTS + t) * 2u] = before;
    norms[(invocation * AGENTS + t) * 2u + 1u] = after;
  }
}

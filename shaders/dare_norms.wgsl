// DARE's L1 norms for mergekit's rescale rule: per agent, the sum of |tau| over the window and over the
// entries the DARE mask keeps. NORM_GROUPS workgroups stride over the window; each writes its partial
// sums per agent (reduced in workgroup memory), and the host adds the partials in f64.
// CPU reference: accumulateDareNorms in src/methods/dare-norms.ts.

const NORM_GROUPS: u32 = 64u;

@group(0) @binding(4) var<storage, read_write> norms: array<f32>;

var<workgroup> before_sums: array<f32, WORKGROUP>;
var<workgroup> after_sums: array<f32, WORKGROUP>;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= NORM_GROUPS) {
    return;
  }
  for (var t = 0u; t < AGENTS; t++) {
    var before = 0.0;
    var after = 0.0;
    for (var e = group * WORKGROUP + lid; e < params.count; e += NORM_GROUPS * WORKGROUP) {
      let magnitude = abs(tau(t, e, load(0u, e)));
      before += magnitude;
      if (dare_kept(t, e)) {
        after += magnitude;
      }
    }
    before_sums[lid] = before;
    after_sums[lid] = after;
    workgroupBarrier();
    for (var half = WORKGROUP / 2u; half > 0u; half = half / 2u) {
      if (lid < half) {
        before_sums[lid] += before_sums[lid + half];
        after_sums[lid] += after_sums[lid + half];
      }
      workgroupBarrier();
    }
    if (lid == 0u) {
      norms[(group * AGENTS + t) * 2u] = before_sums[0];
      norms[(group * AGENTS + t) * 2u + 1u] = after_sums[0];
    }
    workgroupBarrier();
  }
}

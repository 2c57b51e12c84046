// TIES tie-break, step 1: per agent, how many elements of each block of TIE_BLOCK_PAIRS element pairs
// have |tau| bits equal to the agent's threshold (ties.wgsl recounts inside a block); with BAND (Model
// Breadcrumbs) also those equal to its outlier threshold, in rows AGENTS..2·AGENTS−1.
// Counted straight into the cleared storage row: no workgroup memory, so no barriers (SwiftShader
// runs a kernel with barriers far slower).

override BAND: bool = false;

@group(0) @binding(2) var<storage, read_write> tie_counts: array<atomic<u32>>;

fn count_ties(row: u32, p: u32, keys: vec2<u32>, threshold: u32, lanes: u32) {
  let tie = keys == vec2<u32>(threshold);
  let n = select(0u, 1u, tie.x) + select(0u, 1u, tie.y && lanes == 2u);
  if (n != 0u) {
    atomicAdd(&tie_counts[row * tie_blocks() + p / TIE_BLOCK_PAIRS], n);
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  let p = group * WORKGROUP + lid;
  if (2u * p >= params.count) {
    return;
  }
  let lanes = min(params.count - 2u * p, 2u);
  for (var t = 0u; t < AGENTS; t++) {
    let keys = tau_keys(t + 1u, p);
    count_ties(t, p, keys, agents[t].threshold, lanes);
    if (BAND) {
      count_ties(AGENTS + t, p, keys, agents[t].outlier_threshold, lanes);
    }
  }
}

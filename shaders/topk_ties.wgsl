// TIES tie-break, step 1: per agent, how many elements of each merge workgroup's range have |tau| bits
// equal to the agent's threshold. The ranges are those of ties.wgsl (one element pair per invocation).

@group(0) @binding(2) var<storage, read_write> tie_counts: array<u32>;

var<workgroup> local: array<atomic<u32>, AGENTS>;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  if (lid < AGENTS) {
    atomicStore(&local[lid], 0u);
  }
  workgroupBarrier();
  let p = group * WORKGROUP + lid;
  if (2u * p < params.count) {
    let lanes = min(params.count - 2u * p, 2u);
    for (var t = 0u; t < AGENTS; t++) {
      let keys = tau_keys(t + 1u, p);
      for (var lane = 0u; lane < lanes; lane++) {
        if (keys[lane] == agents[t].threshold) {
          atomicAdd(&local[t], 1u);
        }
      }
    }
  }
  workgroupBarrier();
  if (lid < AGENTS) {
    tie_counts[lid * params.groups + group] = atomicLoad(&local[lid]);
  }
}

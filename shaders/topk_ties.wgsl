// TIES tie-break, step 1: per agent, which elements of each block of TIE_BLOCK_PAIRS element pairs
// have |tau| bits equal to the agent's threshold, one bit each in the block's mask word (ties.wgsl
// ranks a tie by a popcount of it); with BAND (Model Breadcrumbs) also those equal to its outlier
// threshold, in rows AGENTS..2·AGENTS−1. Each invocation builds a whole block's mask and stores it:
// no atomics and no workgroup memory (SwiftShader runs barriers and contended atomics slowly), so
// it runs on the merge's dispatch with one invocation in TIE_BLOCK_PAIRS busy. A row whose agent
// keeps none of its ties is never ranked, so it is not marked (a threshold of 0 ties every unchanged
// element).

override BAND: bool = false;

@group(0) @binding(2) var<storage, read_write> tie_counts: array<u32>;

// Bits of the elements of pairs first..first+TIE_BLOCK_PAIRS−1 of agent t whose keys equal `threshold`.
fn tie_mask(t: u32, first: u32, threshold: u32) -> u32 {
  var mask = 0u;
  for (var j = 0u; j < TIE_BLOCK_PAIRS; j++) {
    let e = 2u * (first + j);
    if (e >= params.count) {
      break;
    }
    let tie = (tau_keys(t + 1u, first + j) == vec2<u32>(threshold)) & vec2<bool>(true, e + 1u < params.count);
    mask |= (select(0u, 1u, tie.x) | select(0u, 2u, tie.y)) << (2u * j);
  }
  return mask;
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  let first = (group * WORKGROUP + lid) * TIE_BLOCK_PAIRS;
  if (2u * first >= params.count) {
    return;
  }
  for (var t = 0u; t < AGENTS; t++) {
    if (agents[t].ties_to_keep != 0u) {
      tie_counts[tie_block(t, first) * TIE_BLOCK_WORDS + 1u] = tie_mask(t, first, agents[t].threshold);
    }
    if (BAND && agents[t].outliers_to_drop != 0u) {
      tie_counts[tie_block(AGENTS + t, first) * TIE_BLOCK_WORDS + 1u] = tie_mask(t, first, agents[t].outlier_threshold);
    }
  }
}

// TIES tie-break, step 1: per agent, which elements of each block of TIE_BLOCK_PAIRS element pairs
// have |tau| bits equal to the agent's threshold, one bit each in the block's mask words (ties.wgsl
// ranks a tie by a popcount of them); with BAND (Model Breadcrumbs) also those equal to its outlier
// threshold, in rows AGENTS..2·AGENTS−1. Each invocation builds whole mask words and stores them:
// no atomics and no workgroup memory (SwiftShader runs barriers and contended atomics slowly), so
// it runs on the merge's dispatch with one invocation in MASK_PAIRS busy. A row whose agent keeps
// none of its ties is never ranked, so it is not marked (a threshold of 0 ties every unchanged element).

override BAND: bool = false;

// Element pairs of one mask word.
const MASK_PAIRS: u32 = 16u;

@group(0) @binding(2) var<storage, read_write> tie_counts: array<u32>;

// Bits of the elements of pairs first..first+MASK_PAIRS−1 of agent t whose keys equal `threshold`.
fn tie_mask(t: u32, first: u32, threshold: u32) -> u32 {
  var mask = 0u;
  for (var j = 0u; j < MASK_PAIRS; j++) {
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
  let first = (group * WORKGROUP + lid) * MASK_PAIRS;
  if (2u * first >= params.count) {
    return;
  }
  // The word of the block's mask that holds these pairs (1 or 2).
  let word = 1u + (first % TIE_BLOCK_PAIRS) / MASK_PAIRS;
  for (var t = 0u; t < AGENTS; t++) {
    if (agents[t].ties_to_keep != 0u) {
      tie_counts[tie_block_at(t, first) + word] = tie_mask(t, first, agents[t].threshold);
    }
    if (BAND && agents[t].outliers_to_drop != 0u) {
      tie_counts[tie_block_at(AGENTS + t, first) + word] = tie_mask(t, first, agents[t].outlier_threshold);
    }
  }
}

// TIES tie-break, step 1: per agent, which elements of each block of TIE_BLOCK_PAIRS element pairs
// have |tau| bits equal to the agent's threshold, one bit each in the block's mask word (topk_scan
// counts them to find the first tie not kept); with BAND (Model Breadcrumbs) also those equal to its
// outlier threshold, in rows AGENTS..2·AGENTS−1. Each invocation builds a whole block's masks and
// stores them: no atomics and no workgroup memory (SwiftShader runs barriers and contended atomics
// slowly). It is dispatched with one invocation per block (kernels/topk_ties.ts). It loads the base
// again for each agent: kept in a private array for all of them, it cost more on SwiftShader than
// the loads. A row whose agent keeps none of its ties is not marked (a threshold of 0 ties every
// unchanged element). Where the count pass found the chunk that holds an agent's first tie not kept
// (tie_first < tie_end), only that chunk's blocks are marked, and the rest of the pass costs nothing.

override BAND: bool = false;

@group(0) @binding(2) var<storage, read_write> tie_counts: array<u32>;

// Whether agent t's ties are marked in the block from window pair `first`: everywhere, or inside its
// span of the tensor (chunk-aligned, so a block is wholly in or out of it).
fn marked_here(t: u32, first: u32) -> bool {
  let a = agents[t];
  let e = params.start_lo + 2u * first;
  return a.tie_first == a.tie_end || (e >= a.tie_first && e < a.tie_end);
}

// Bits of the elements of the block's first `pairs` pairs (from pair `first`) of agent t whose keys
// equal `threshold`.
fn tie_marks(t: u32, first: u32, pairs: u32, threshold: u32) -> u32 {
  var marks = 0u;
  for (var j = 0u; j < pairs; j++) {
    let tie = tau_keys(t + 1u, first + j) == vec2<u32>(threshold);
    marks |= (select(0u, 1u, tie.x) | select(0u, 2u, tie.y)) << (2u * j);
  }
  return marks;
}

@compute @workgroup_size(WORKGROUP)
fn main(
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) groups: vec3u,
  @builtin(local_invocation_index) lid: u32,
) {
  let b = (wid.y * groups.x + wid.x) * WORKGROUP + lid;
  let first = b * TIE_BLOCK_PAIRS;
  if (b >= tie_blocks() || 2u * first >= params.count) {
    return;
  }
  let elements = min(params.count - 2u * first, 2u * TIE_BLOCK_PAIRS);
  let pairs = (elements + 1u) / 2u;
  // An odd window's last pair has one element: its other lane is never a tie.
  let valid = select(0xffffffffu, (1u << elements) - 1u, elements < 32u);
  for (var t = 0u; t < AGENTS; t++) {
    if (agents[t].ties_to_keep != 0u && marked_here(t, first)) {
      tie_counts[tie_block(t, first) * TIE_BLOCK_WORDS] = valid & tie_marks(t, first, pairs, agents[t].threshold);
    }
    if (BAND && agents[t].outliers_to_drop != 0u) {
      tie_counts[tie_block(AGENTS + t, first) * TIE_BLOCK_WORDS] =
        valid & tie_marks(t, first, pairs, agents[t].outlier_threshold);
    }
  }
}

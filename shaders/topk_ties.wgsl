// TIES tie-break, step 1: per agent, which elements of each block of TIE_BLOCK_PAIRS element pairs
// have |tau| bits equal to the agent's threshold, one bit each in the block's mask word (topk_scan
// counts them to find the first tie not kept); with BAND (Model Breadcrumbs) also those equal to its
// outlier threshold, in rows AGENTS..2·AGENTS−1. Each invocation builds a whole block's masks and
// stores them: no atomics and no workgroup memory (SwiftShader runs barriers and contended atomics
// slowly). It is dispatched with one invocation per block (kernels/topk_ties.ts). It loads the base
// again for each agent: kept in a private array for all of them, it cost more on SwiftShader than
// the loads. A row whose agent keeps none of its ties is not marked (a threshold of 0 ties every
// unchanged element). Where the count pass found the chunk that holds a row's first tie not kept
// (tie_first < tie_end; outlier_tie_first < outlier_tie_end for row AGENTS + t), only that chunk's
// blocks are marked: by a dispatch of this kernel with SPAN_ROW = the row, over that chunk alone
// (kernels/topk_ties.ts spanMarkDispatch); the dispatch over the whole window (SPAN_ROW =
// NO_SPAN_ROW) marks only the rows without a span.

override BAND: bool = false;
const NO_SPAN_ROW: u32 = 0xffffffffu;
// NO_SPAN_ROW (a literal: an override initialised from a const reads as derived to the contract test).
override SPAN_ROW: u32 = 0xffffffffu;

@group(0) @binding(2) var<storage, read_write> tie_counts: array<u32>;

// A tie row's threshold and span: row t < AGENTS is agent t's kept top-k, row AGENTS + t its outliers'.
struct TieRow {
  threshold: u32,
  first: u32,
  end: u32,
}

fn tie_row(row: u32) -> TieRow {
  if (row < AGENTS) {
    let a = agents[row];
    return TieRow(a.threshold, a.tie_first, a.tie_end);
  }
  let a = agents[row - AGENTS];
  return TieRow(a.outlier_threshold, a.outlier_tie_first, a.outlier_tie_end);
}

// A row with a span is marked by the dispatch of its own span.
fn has_span(row: u32) -> bool {
  let r = tie_row(row);
  return r.first != r.end;
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
  var b = (wid.y * groups.x + wid.x) * WORKGROUP + lid;
  let span = tie_row(min(SPAN_ROW, 2u * AGENTS - 1u));
  if (SPAN_ROW != NO_SPAN_ROW) {
    // The span's blocks, from its first (a chunk starts on a block: its window index is a multiple of
    // the chunk's 16384 elements).
    b += (span.first - params.start_lo) / (2u * TIE_BLOCK_PAIRS);
    if (2u * b * TIE_BLOCK_PAIRS >= span.end - params.start_lo) {
      return;
    }
  }
  let first = b * TIE_BLOCK_PAIRS;
  if (b >= tie_blocks() || 2u * first >= params.count) {
    return;
  }
  let elements = min(params.count - 2u * first, 2u * TIE_BLOCK_PAIRS);
  let pairs = (elements + 1u) / 2u;
  // An odd window's last pair has one element: its other lane is never a tie.
  let valid = select(0xffffffffu, (1u << elements) - 1u, elements < 32u);
  if (SPAN_ROW != NO_SPAN_ROW) {
    tie_counts[tie_block(SPAN_ROW, first) * TIE_BLOCK_WORDS] =
      valid & tie_marks(SPAN_ROW % AGENTS, first, pairs, span.threshold);
    return;
  }
  for (var t = 0u; t < AGENTS; t++) {
    if (agents[t].ties_to_keep != 0u && !has_span(t)) {
      tie_counts[tie_block(t, first) * TIE_BLOCK_WORDS] = valid & tie_marks(t, first, pairs, agents[t].threshold);
    }
    if (BAND && agents[t].outliers_to_drop != 0u && !has_span(AGENTS + t)) {
      tie_counts[tie_block(AGENTS + t, first) * TIE_BLOCK_WORDS] =
        valid & tie_marks(t, first, pairs, agents[t].outlier_threshold);
    }
  }
}

// TIES tie-break, step 2 (one workgroup): counts each agent's ties per block (the marks of
// topk_ties) and stores their exclusive prefix sums in the blocks' first words, starting from the ties
// of the tensor's earlier windows (carry), and advances carry.
// With BAND (Model Breadcrumbs) the outlier thresholds' rows AGENTS..2·AGENTS−1 too.

override BAND: bool = false;

@group(0) @binding(2) var<storage, read_write> tie_counts: array<u32>;

// Ties marked in block i of tie row `row`.
fn block_ties(row: u32, i: u32) -> u32 {
  return countOneBits(tie_counts[(row + i) * TIE_BLOCK_WORDS + 1u]);
}
@group(0) @binding(4) var<storage, read_write> carry: array<u32>;

var<workgroup> partial: array<u32, WORKGROUP>;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(local_invocation_index) lid: u32) {
  let n = tie_blocks();
  let chunk = (n + WORKGROUP - 1u) / WORKGROUP;
  let begin = min(lid * chunk, n);
  let end = min(begin + chunk, n);
  let rows = select(AGENTS, 2u * AGENTS, BAND);
  for (var t = 0u; t < rows; t++) {
    let row = t * n;
    var own = 0u;
    for (var i = begin; i < end; i++) {
      own += block_ties(row, i);
    }
    partial[lid] = own;
    workgroupBarrier();
    for (var offset = 1u; offset < WORKGROUP; offset <<= 1u) {
      var v = 0u;
      if (lid >= offset) {
        v = partial[lid - offset];
      }
      workgroupBarrier();
      partial[lid] += v;
      workgroupBarrier();
    }
    let before = carry[t];
    var run = before + partial[lid] - own;
    for (var i = begin; i < end; i++) {
      tie_counts[(row + i) * TIE_BLOCK_WORDS] = run;
      run += block_ties(row, i);
    }
    // Every invocation has read carry[t] before it moves on.
    storageBarrier();
    if (lid == 0u) {
      carry[t] = before + partial[WORKGROUP - 1u];
    }
    workgroupBarrier();
  }
}

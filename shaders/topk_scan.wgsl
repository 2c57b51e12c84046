// TIES tie-break, step 2 (one workgroup): turns each agent's per-block tie counts into exclusive
// prefix sums, starting from the ties of the tensor's earlier windows (carry), and advances carry.
// With BAND (Model Breadcrumbs) the outlier thresholds' rows AGENTS..2·AGENTS−1 too.

override BAND: bool = false;

@group(0) @binding(2) var<storage, read_write> tie_counts: array<u32>;
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
      own += tie_counts[row + i];
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
      let c = tie_counts[row + i];
      tie_counts[row + i] = run;
      run += c;
    }
    // Every invocation has read carry[t] before it moves on.
    storageBarrier();
    if (lid == 0u) {
      carry[t] = before + partial[WORKGROUP - 1u];
    }
    workgroupBarrier();
  }
}

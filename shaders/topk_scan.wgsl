// TIES tie-break, step 2 (one workgroup): per tie row, the window-local index of the first tie that
// is not kept (its rank, counted in index order from the ties of the tensor's earlier windows, is
// the row's ties to keep), so the merge keeps a tie by one comparison with it instead of ranking
// every tie; then carry advances by the window's ties. Ties are counted from topk_ties's marks.
// With BAND (Model Breadcrumbs) the outlier thresholds' rows AGENTS..2·AGENTS−1 too.
//
// carry layout (TIE_CARRY_WORDS per agent, src/engine/kernels/topk_scan.ts): words 0..2·AGENTS−1
// the cutoffs of the window (NO_CUTOFF: every tie in it is kept), then one count per row of the
// ties in the tensor's earlier windows.

override BAND: bool = false;

@group(0) @binding(2) var<storage, read> tie_counts: array<u32>;
@group(0) @binding(4) var<storage, read_write> carry: array<u32>;

const NO_CUTOFF: u32 = 0xffffffffu;

var<workgroup> partial: array<u32, WORKGROUP>;

// Tie marks of block i of tie row `row` (which starts at block `row`).
fn block_marks(row: u32, i: u32) -> u32 {
  return tie_counts[(row + i) * TIE_BLOCK_WORDS];
}

// The ties row t keeps, lowest index first.
fn ties_kept(t: u32) -> u32 {
  if (t < AGENTS) {
    return agents[t].ties_to_keep;
  }
  return agents[t - AGENTS].outliers_to_drop;
}

// Index in its block of the (n+1)-th marked element of `marks`.
fn nth_mark(marks: u32, n: u32) -> u32 {
  var rest = marks;
  for (var i = 0u; i < n; i++) {
    rest &= rest - 1u;
  }
  return countTrailingZeros(rest);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(local_invocation_index) lid: u32) {
  let n = tie_blocks();
  let chunk = (n + WORKGROUP - 1u) / WORKGROUP;
  let begin = min(lid * chunk, n);
  let end = min(begin + chunk, n);
  let rows = select(AGENTS, 2u * AGENTS, BAND);
  let carried = 2u * AGENTS;
  for (var t = 0u; t < rows; t++) {
    let row = t * n;
    var own = 0u;
    for (var i = begin; i < end; i++) {
      own += countOneBits(block_marks(row, i));
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
    let before = carry[carried + t];
    let total = partial[WORKGROUP - 1u];
    let keep = ties_kept(t);
    // The first tie not kept: in this window only if its rank is among the window's ties (a row
    // that keeps none is not marked, and keeps none here either).
    if (keep >= before && keep < before + total) {
      var run = before + partial[lid] - own;
      if (keep >= run && keep < run + own) {
        for (var i = begin; i < end; i++) {
          let marks = block_marks(row, i);
          let ties = countOneBits(marks);
          if (keep < run + ties) {
            carry[t] = 2u * TIE_BLOCK_PAIRS * i + nth_mark(marks, keep - run);
            break;
          }
          run += ties;
        }
      }
    } else if (lid == 0u) {
      carry[t] = select(NO_CUTOFF, 0u, keep <= before);
    }
    // Every invocation has read carry before it moves on.
    storageBarrier();
    if (lid == 0u) {
      carry[carried + t] = before + total;
    }
    workgroupBarrier();
  }
}

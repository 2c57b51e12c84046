// The tensor view's per-element mask, aggregated into a grid of blocks: each element inside the view
// adds 1 to its block's counter of its class (unique to agent t, shared with one sign, sign conflict)
// and 1 to the block's changed counter of each agent that changed it. Unchanged elements add nothing:
// the host knows each block's size. One pass over the windows of the viewed rows builds the whole
// grid, so a view change reads the tensor at most once.
//
// Per block, CELL_STRIDE counters (src/engine/kernels/mask.ts maskLayout mirrors it):
//   t                   unique to agent t (the only agent with |tau| > epsilon)
//   AGENTS              shared, every changing agent's tau of one sign
//   AGENTS + 1          shared with a sign conflict
//   AGENTS + 2 + t      changed by agent t (unique or shared), for the row and column profiles

// Elements per invocation (MASK_ITEMS in src/engine/plumbing.ts).
const ITEMS: u32 = 16u;

override CELL_STRIDE: u32 = 2u * AGENTS + 2u;

struct View {
  tensor_cols: u32,  // elements per row of the tensor viewed as rows x cols
  row0: u32,         // the view's first row and column
  col0: u32,
  rows: u32,         // the view's extent
  cols: u32,
  block_rows: u32,   // elements per block, down and across
  block_cols: u32,
  grid_cols: u32,    // blocks per grid row
}

@group(0) @binding(2) var<storage, read_write> grid: array<atomic<u32>>;
@group(0) @binding(4) var<uniform> view: View;

fn count_element(e: u32) {
  let g = params.start_lo + e;
  let row = g / view.tensor_cols;
  let col = g - row * view.tensor_cols;
  // Unsigned wrap-around sends rows and columns before the view's origin past its extent.
  let r = row - view.row0;
  let c = col - view.col0;
  if (r >= view.rows || c >= view.cols) {
    return;
  }
  let base = load(0u, e);
  var changed = 0u;
  var positive = 0u;
  for (var t = 0u; t < AGENTS; t++) {
    let x = load(t + 1u, e) - base;
    if (abs(x) > params.epsilon) {
      changed |= 1u << t;
      if (x > 0.0) {
        positive |= 1u << t;
      }
    }
  }
  if (changed == 0u) {
    return;
  }
  let cell = ((r / view.block_rows) * view.grid_cols + c / view.block_cols) * CELL_STRIDE;
  var kind = AGENTS;
  if (countOneBits(changed) == 1u) {
    kind = firstTrailingBit(changed);
  } else if (positive != 0u && positive != changed) {
    kind = AGENTS + 1u;
  }
  atomicAdd(&grid[cell + kind], 1u);
  var rest = changed;
  while (rest != 0u) {
    atomicAdd(&grid[cell + AGENTS + 2u + firstTrailingBit(rest)], 1u);
    rest &= rest - 1u;
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  // Consecutive elements per invocation: neighbours in a row mostly share a block.
  let first = (group * WORKGROUP + lid) * ITEMS;
  let last = min(first + ITEMS, params.count);
  for (var e = first; e < last; e++) {
    count_element(e);
  }
}

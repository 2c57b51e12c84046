// The tensor view's per-element mask, aggregated into a grid of blocks: each element inside the view
// adds 1 to its block's counter of its class (unique to agent t, shared with one sign, sign conflict,
// non-finite) and 1 to the block's changed counter of each agent that changed it. Unchanged elements add nothing:
// the host knows each block's size. One pass over the windows of the viewed rows builds the whole
// grid, so a view change reads the tensor at most once.
//
// Per block, CELL_STRIDE counters (maskLayout in src/methods/mask-geometry.ts mirrors it):
//   t                   unique to agent t (the only agent with |tau| > epsilon)
//   AGENTS              shared, every changing agent's tau of one sign
//   AGENTS + 1          shared with a sign conflict
//   AGENTS + 2          non-finite (SPEC.md "Non-finite values"): the models' bits differ and one of
//                       them is NaN or ±Inf; not classified, so no other counter holds it
//   AGENTS + 3 + t      changed by agent t (unique or shared), for the row and column profiles
// Special values are told on bit patterns (finite.wgsl's scan): an element every model stores with
// the same NaN or ±Inf bits is unchanged.

// Elements per invocation (MASK_ITEMS in src/engine/kernels/mask.ts), an even count: whole pairs.
const ITEMS: u32 = 16u;

override CELL_STRIDE: u32 = 2u * AGENTS + 3u;

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

// Adds element e (of the window) to its block: its class, or non-finite, and each changing agent.
fn count_element(e: u32, changed: u32, positive: u32, special: bool, non_finite: bool) {
  let g = params.start_lo + e;
  let row = g / view.tensor_cols;
  let col = g - row * view.tensor_cols;
  // Unsigned wrap-around sends rows and columns before the view's origin past its extent.
  let r = row - view.row0;
  let c = col - view.col0;
  if (r >= view.rows || c >= view.cols) {
    return;
  }
  let cell = ((r / view.block_rows) * view.grid_cols + c / view.block_cols) * CELL_STRIDE;
  if (non_finite) {
    atomicAdd(&grid[cell + AGENTS + 2u], 1u);
    return;
  }
  // The same NaN or ±Inf bits in every model: unchanged, whatever tau the floats would give.
  if (special || changed == 0u) {
    return;
  }
  var kind = AGENTS;
  if (countOneBits(changed) == 1u) {
    kind = firstTrailingBit(changed);
  } else if (positive != 0u && positive != changed) {
    kind = AGENTS + 1u;
  }
  atomicAdd(&grid[cell + kind], 1u);
  var rest = changed;
  while (rest != 0u) {
    atomicAdd(&grid[cell + AGENTS + 3u + firstTrailingBit(rest)], 1u);
    rest &= rest - 1u;
  }
}

// Elements 2p and 2p+1 of the window, with one load of a 16-bit input's word per model.
fn count_pair(p: u32) {
  let base_bits = load_pair_bits(0u, p);
  let base = bitcast<vec2<f32>>(base_bits);
  var s = scan_start(0u, base_bits);
  var changed = vec2<u32>(0u);
  var positive = vec2<u32>(0u);
  for (var t = 0u; t < AGENTS; t++) {
    let bits = load_pair_bits(t + 1u, p);
    s = scan_add(s, bits);
    let x = bitcast<vec2<f32>>(bits) - base;
    let ch = abs(x) > vec2<f32>(params.epsilon);
    let bit = vec2<u32>(1u << t);
    changed |= select(vec2<u32>(0u), bit, ch);
    positive |= select(vec2<u32>(0u), bit, ch & (x > vec2<f32>(0.0)));
  }
  let special = s.least == vec2<u32>(0u);
  let non_finite = special & (s.diff != vec2<u32>(0u));
  count_element(2u * p, changed.x, positive.x, special.x, non_finite.x);
  // Past the window's end the second lane is meaningless.
  if (2u * p + 1u < params.count) {
    count_element(2u * p + 1u, changed.y, positive.y, special.y, non_finite.y);
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  // Consecutive elements per invocation: neighbours in a row mostly share a block.
  let first = (group * WORKGROUP + lid) * (ITEMS / 2u);
  let last = min(first + ITEMS / 2u, (params.count + 1u) / 2u);
  for (var p = first; p < last; p++) {
    count_pair(p);
  }
}

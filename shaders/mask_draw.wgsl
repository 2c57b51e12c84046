// Draws the mask grid of shaders/mask.wgsl into the tensor view's canvas: each pixel shows the block
// under it, its hue the mix of the block's classes weighted by their counts, its strength the share of
// the block's elements that changed or are non-finite (square root, so a block with one change in
// thousands still shows). Unchanged blocks take the background colour.

override AGENTS: u32 = 2u;
override CELL_STRIDE: u32 = 2u * AGENTS + 3u;

struct Draw {
  width: f32,        // canvas size in pixels
  height: f32,
  grid_rows: u32,    // blocks down and across
  grid_cols: u32,
  rows: u32,         // the view's extent in elements
  cols: u32,
  block_rows: u32,   // elements per block, down and across
  block_cols: u32,
}

@group(0) @binding(0) var<uniform> draw: Draw;
@group(0) @binding(1) var<storage, read> grid: array<u32>;
// Colours: unchanged at 0, shared at 1, sign conflict at 2, non-finite at 3, unique to agent t at 4 + t
// (any agent count).
@group(0) @binding(2) var<storage, read> palette: array<vec4f>;

@vertex
fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  // One triangle that covers the whole canvas.
  let x = f32((i << 1u) & 2u) * 2.0 - 1.0;
  let y = f32(i & 2u) * 2.0 - 1.0;
  return vec4f(x, y, 0.0, 1.0);
}

@fragment
fn fs(@builtin(position) p: vec4f) -> @location(0) vec4f {
  let gx = min(u32(p.x * f32(draw.grid_cols) / draw.width), draw.grid_cols - 1u);
  let gy = min(u32(p.y * f32(draw.grid_rows) / draw.height), draw.grid_rows - 1u);
  let cell = (gy * draw.grid_cols + gx) * CELL_STRIDE;
  let height = min(draw.block_rows, draw.rows - gy * draw.block_rows);
  let width = min(draw.block_cols, draw.cols - gx * draw.block_cols);
  let numel = f32(height * width);
  let background = palette[0];
  var changed = 0.0;
  var mixed = vec4f(0.0);
  for (var k = 0u; k < AGENTS + 3u; k++) {
    let n = f32(grid[cell + k]);
    changed += n;
    // Grid order is unique 0..N-1, shared, conflict, non-finite; palette order puts the last three first.
    mixed += n * palette[select(k - AGENTS + 1u, k + 4u, k < AGENTS)];
  }
  if (changed == 0.0) {
    return background;
  }
  let strength = 0.35 + 0.65 * sqrt(changed / numel);
  return vec4f(mix(background.rgb, mixed.rgb / changed, strength), 1.0);
}

// Rotary embedding, rotate_half convention: one invocation per (row, head, i < half) rotates the pair
// (x_i, x_{i+half}) of that head by the row's angle from the host's tables [rows, half].

struct Params {
  total: u32,  // rows · heads · half
  half: u32,
  heads: u32,
  groups_x: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> cos_table: array<f32>;
@group(0) @binding(3) var<storage, read> sin_table: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let id = (wid.y * params.groups_x + wid.x) * 256u + lid;
  if (id >= params.total) {
    return;
  }
  let i = id % params.half;
  let row_head = id / params.half;
  let row = row_head / params.heads;
  // Heads are contiguous within a row and rows within x: head (row, h) starts at row_head · headDim.
  let head = row_head * 2u * params.half;
  let c = cos_table[row * params.half + i];
  let s = sin_table[row * params.half + i];
  let a = x[head + i];
  let b = x[head + i + params.half];
  out[head + i] = a * c - b * s;
  out[head + i + params.half] = b * c + a * s;
}

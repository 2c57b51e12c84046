// out row i = x row index[i]: one invocation per output element (an exact copy).

struct Params {
  count: u32,  // output elements
  cols: u32,
  groups_x: u32,
  pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * params.groups_x + wid.x) * 256u + lid;
  if (i >= params.count) {
    return;
  }
  out[i] = x[index[i / params.cols] * params.cols + i % params.cols];
}

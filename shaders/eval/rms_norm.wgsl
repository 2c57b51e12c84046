// RMSNorm of each `dim`-long group (a whole row, or one head for Qwen3's q_norm/k_norm): one
// workgroup per group, sum of squares in f32 (per invocation, then a tree), then as Llama computes it:
// x · 1/sqrt(mean(x²) + eps), times the weight.

struct Params {
  instances: u32,  // groups in all rows
  dim: u32,
  groups_x: u32,   // workgroups per row of a 2-D dispatch
  eps: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wid.y * params.groups_x + wid.x;
  if (g >= params.instances) {
    return;
  }
  let base = g * params.dim;
  var sum = 0.0;
  for (var i = lid; i < params.dim; i += 256u) {
    let v = x[base + i];
    sum += v * v;
  }
  partial[lid] = sum;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) {
      partial[lid] += partial[lid + s];
    }
    workgroupBarrier();
  }
  let inverse = 1.0 / sqrt(partial[0] / f32(params.dim) + params.eps);
  for (var i = lid; i < params.dim; i += 256u) {
    out[base + i] = x[base + i] * inverse * weight_at(i);
  }
}

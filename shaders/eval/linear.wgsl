// out[m, out_start + n] = Σ_k x[m, k] · W[w_row_start + n, k] (+ bias[out_start + n]) for one block of
// W's rows: a tiled matmul, TM rows × TN outputs per workgroup, K in steps of TK through workgroup
// memory. Each of the 256 invocations keeps 2 × 4 sums: rows ty + 16i, outputs tx + 16j (strided, so
// neighbouring invocations read neighbouring workgroup words). Out-of-range rows, outputs and k read
// as 0, which adds nothing: any size works. Sums are f32, in k order.

struct Params {
  rows: u32,
  in_dim: u32,
  out_count: u32,    // W rows of this dispatch
  out_stride: u32,   // columns of out
  out_start: u32,    // out column (and bias index) of this dispatch's first W row
  w_row_start: u32,  // first W row of this dispatch inside the bound block
  bias_dtype: u32,   // DTYPE_* of bias
  has_bias: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const TM: u32 = 32u;
const TN: u32 = 64u;
const TK: u32 = 16u;

var<workgroup> xs: array<f32, 512>;   // [TK][TM]
var<workgroup> ws: array<f32, 1024>;  // [TK][TN]

fn bias_at(e: u32) -> f32 {
  if (params.bias_dtype == DTYPE_F32) {
    return bitcast<f32>(bias[e]);
  }
  let word = bias[e >> 1u];
  return bitcast<f32>(decode16(params.bias_dtype, (word >> ((e & 1u) * 16u)) & 0xffffu));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let n0 = wid.x * TN;
  let m0 = wid.y * TM;
  let tx = lid % 16u;
  let ty = lid / 16u;
  var acc: array<array<f32, 4>, 2>;
  for (var k0 = 0u; k0 < params.in_dim; k0 += TK) {
    for (var i = 0u; i < 2u; i++) {
      let idx = lid + i * 256u;
      let k = idx % TK;
      let m = idx / TK;
      var v = 0.0;
      if (m0 + m < params.rows && k0 + k < params.in_dim) {
        v = x[(m0 + m) * params.in_dim + k0 + k];
      }
      xs[k * TM + m] = v;
    }
    for (var i = 0u; i < 4u; i++) {
      let idx = lid + i * 256u;
      let k = idx % TK;
      let n = idx / TK;
      var v = 0.0;
      if (n0 + n < params.out_count && k0 + k < params.in_dim) {
        v = weight_at((params.w_row_start + n0 + n) * params.in_dim + k0 + k);
      }
      ws[k * TN + n] = v;
    }
    workgroupBarrier();
    for (var k = 0u; k < TK; k++) {
      let a0 = xs[k * TM + ty];
      let a1 = xs[k * TM + ty + 16u];
      for (var j = 0u; j < 4u; j++) {
        let b = ws[k * TN + tx + 16u * j];
        acc[0][j] += a0 * b;
        acc[1][j] += a1 * b;
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 2u; i++) {
    let m = m0 + ty + 16u * i;
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + tx + 16u * j;
      if (m < params.rows && n < params.out_count) {
        var v = acc[i][j];
        if (params.has_bias != 0u) {
          v += bias_at(params.out_start + n);
        }
        out[m * params.out_stride + params.out_start + n] = v;
      }
    }
  }
}

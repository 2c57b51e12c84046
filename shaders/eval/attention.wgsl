// Causal attention, one workgroup per (row, query head), keys in tiles of WG with a running softmax
// (flash-attention style, f32): per tile each invocation scores one key (scale · q·k, q held in
// workgroup memory), the tile's maximum comes from a tree, the running sums are rescaled by
// exp(m_old − m_new), and each invocation accumulates Σ p_j · v_j for its own dimensions
// (d = lid + WG·e). Row r sees keys first ≤ j ≤ r: its sequence's start, later under a sliding window.

struct Params {
  rows: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  window: u32,    // 0: none
  groups_x: u32,  // workgroups per row of a 2-D dispatch
  scale: f32,
  pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> seq_start: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const WG: u32 = 64u;
// head_dim ≤ WG · DIMS (the host checks).
const DIMS: u32 = 4u;
// The lowest finite f32: a running maximum that any real score replaces, and exp(it − m) is 0.
const LOWEST: f32 = -0x1.fffffep+127f;

var<workgroup> qs: array<f32, 256>;
var<workgroup> red: array<f32, 64>;
var<workgroup> probs: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wid.y * params.groups_x + wid.x;
  if (g >= params.rows * params.heads) {
    return;
  }
  let r = g / params.heads;
  let h = g % params.heads;
  let hd = params.head_dim;
  let kv = (h / (params.heads / params.kv_heads)) * hd;
  let q_base = r * params.heads * hd + h * hd;
  let kv_cols = params.kv_heads * hd;
  for (var d = lid; d < hd; d += WG) {
    qs[d] = q[q_base + d];
  }
  var first = seq_start[r];
  if (params.window > 0u && r + 1u > params.window) {
    first = max(first, r + 1u - params.window);
  }
  var m = LOWEST;
  var l = 0.0;
  var acc: array<f32, 4>;
  workgroupBarrier();
  for (var t0 = first; t0 <= r; t0 += WG) {
    let j = t0 + lid;
    var score = LOWEST;
    if (j <= r) {
      var dot = 0.0;
      for (var d = 0u; d < hd; d++) {
        dot += qs[d] * k[j * kv_cols + kv + d];
      }
      score = params.scale * dot;
    }
    red[lid] = score;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
      if (lid < s) {
        red[lid] = max(red[lid], red[lid + s]);
      }
      workgroupBarrier();
    }
    let m_new = max(m, red[0]);
    var p = 0.0;
    if (j <= r) {
      p = exp(score - m_new);
    }
    probs[lid] = p;
    // 0 on the first tile (m = LOWEST), where l and acc are still 0.
    let factor = exp(m - m_new);
    workgroupBarrier();
    let count = min(WG, r + 1u - t0);
    var tile_sum = 0.0;
    for (var jj = 0u; jj < count; jj++) {
      tile_sum += probs[jj];
    }
    l = l * factor + tile_sum;
    for (var e = 0u; e < DIMS; e++) {
      let d = lid + e * WG;
      if (d < hd) {
        var sum = 0.0;
        for (var jj = 0u; jj < count; jj++) {
          sum += probs[jj] * v[(t0 + jj) * kv_cols + kv + d];
        }
        acc[e] = acc[e] * factor + sum;
      }
    }
    m = m_new;
    // red[0] and probs are read above before the next tile overwrites them.
    workgroupBarrier();
  }
  for (var e = 0u; e < DIMS; e++) {
    let d = lid + e * WG;
    if (d < hd) {
      out[q_base + d] = acc[e] / l;
    }
  }
}

// Exact per-window statistics (src/engine/types.ts TensorStats): u32 counters accumulated first in
// workgroup atomics, then added to the global counters with one atomicAdd per non-zero counter per
// workgroup. counts[0] is left to the host (window count minus the rest): it is the hottest counter.
//
// Counter layout (src/engine/kernels/stats.ts mirrors it):
//   [c]                              counts[c], c = 1..N (index 0 unused)
//   OVERLAP + t * N + k              overlap[t][k]
//   SIGN                             signConflicts
//   MAGNITUDE + t * BINS + b         magnitude[t][b], b = clamp(floor(log2 |tau|), MIN_EXP, MAX_EXP) - MIN_EXP
//   ULP + t                          oneUlp[t]

// Element pairs per invocation: 8 elements, 2048 per workgroup.
const PAIRS: u32 = 4u;
const MIN_EXP: i32 = -40;
const MAX_EXP: i32 = 8;
const BINS: u32 = 49u;

override OVERLAP: u32 = AGENTS + 1u;
override SIGN: u32 = OVERLAP + AGENTS * AGENTS;
override MAGNITUDE: u32 = SIGN + 1u;
override ULP: u32 = MAGNITUDE + AGENTS * BINS;
override COUNTERS: u32 = ULP + AGENTS;

@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>>;

var<workgroup> local: array<atomic<u32>, COUNTERS>;

// Bits of one ulp of the stored base value in the input dtype (a power of two, possibly an f32
// subnormal pattern), so |tau| <= ulp is an integer comparison.
fn ulp_bits(base_bits: u32) -> u32 {
  var min_exponent = 1u;
  var mantissa_bits = 23;
  if (IN_DTYPE == DTYPE_BF16) {
    mantissa_bits = 7;
  } else if (IN_DTYPE == DTYPE_F16) {
    // A half's exponent field 1 is f32 exponent 113; half subnormals share its ulp.
    min_exponent = 113u;
    mantissa_bits = 10;
  }
  let u = i32(max((base_bits >> 23u) & 0xffu, min_exponent)) - 127 - mantissa_bits;
  if (u >= -126) {
    return u32(u + 127) << 23u;
  }
  return 1u << u32(u + 149);
}

// Counts one element from the set of agents that changed it and the set that raised it.
fn count_changes(changed: u32, positive: u32) {
  let c = countOneBits(changed);
  if (c == 0u) {
    return;
  }
  atomicAdd(&local[c], 1u);
  for (var t = 0u; t < AGENTS; t++) {
    if ((changed & (1u << t)) != 0u) {
      atomicAdd(&local[OVERLAP + t * AGENTS + c - 1u], 1u);
    }
  }
  if (c >= 2u && positive != 0u && positive != changed) {
    atomicAdd(&local[SIGN], 1u);
  }
}

// Counts elements 2p and 2p+1 (only the first when the second is past the window's end).
fn count_pair(p: u32) {
  let lanes = min(params.count - 2u * p, 2u);
  let base_bits = load_pair_bits(0u, p);
  let base = bitcast<vec2<f32>>(base_bits);
  let ulp = vec2<u32>(ulp_bits(base_bits.x), ulp_bits(base_bits.y));
  var changed = vec2<u32>(0u);
  var positive = vec2<u32>(0u);
  for (var t = 0u; t < AGENTS; t++) {
    let x = load_pair(t + 1u, p) - base;
    for (var j = 0u; j < lanes; j++) {
      let xj = x[j];
      if (abs(xj) > params.epsilon) {
        changed[j] |= 1u << t;
        if (xj > 0.0) {
          positive[j] |= 1u << t;
        }
        let key = magnitude_key(xj);
        let bin = u32(clamp(i32(key >> 23u) - 127, MIN_EXP, MAX_EXP) - MIN_EXP);
        atomicAdd(&local[MAGNITUDE + t * BINS + bin], 1u);
        if (key <= ulp[j]) {
          atomicAdd(&local[ULP + t], 1u);
        }
      }
    }
  }
  for (var j = 0u; j < lanes; j++) {
    count_changes(changed[j], positive[j]);
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  for (var i = lid; i < COUNTERS; i += WORKGROUP) {
    atomicStore(&local[i], 0u);
  }
  workgroupBarrier();
  let first = group * WORKGROUP * PAIRS + lid;
  for (var j = 0u; j < PAIRS; j++) {
    let p = first + j * WORKGROUP;
    if (2u * p < params.count) {
      count_pair(p);
    }
  }
  workgroupBarrier();
  for (var i = lid; i < COUNTERS; i += WORKGROUP) {
    let v = atomicLoad(&local[i]);
    if (v != 0u) {
      atomicAdd(&counters[i], v);
    }
  }
}

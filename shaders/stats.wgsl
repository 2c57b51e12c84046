// Exact per-window statistics (src/methods/merge-types.ts TensorStats): u32 counters accumulated first in
// workgroup atomics, then added to the global counters with one atomicAdd per non-zero counter per
// workgroup. counts[0] is left to the host (window count minus the rest): it is the hottest counter.
// Each element pair is worked on as a vec2 without branches except around its atomics, and sign
// conflicts and each agent's one-ulp changes are summed per invocation (as a workgroup atomic per
// element, the one-ulp counter, which every element moved by one step hits, cost SwiftShader 7–9% of
// the kernel): on SwiftShader the branchy per-lane version was ~25% slower.
// 128 elements per invocation amortise the clear, flush and barriers (on SwiftShader 1.6× faster
// than 8), and counting each element once by its set of changing agents, not in 1 + |set| counters,
// made it 2.3× faster in all.
//
// Counter layout (src/engine/kernels/stats.ts mirrors it):
//   [c]                              counts[c], c = 1..N (index 0 unused)
//   OVERLAP + t * N + k              overlap[t][k]
//   SIGN                             signConflicts
//   MAGNITUDE + t * BINS + b         magnitude[t][b], b = clamp(floor(log2 |tau|), MIN_EXP, MAX_EXP) - MIN_EXP
//   ULP + t                          oneUlp[t]
//   NONFINITE                        nonFinite: elements whose bits differ and hold NaN or ±Inf
//   NONFINITE + 1 + m                nonFiniteModels[m]: of those, where model m (0 = base) holds one
//   PAIRWISE + t * N + u, t < u      pairs[t][u] (AGENTS <= 8 only: global, never in workgroup memory)
//   SET_COUNTS + m, m >= 1           sets[m]: elements changed by exactly the agents of bitmask m (AGENTS <= 8)

// Element pairs per invocation: 128 elements (STATS_ITEMS in src/engine/plumbing.ts), 32768 per
// workgroup.
const PAIRS: u32 = 64u;
const MIN_EXP: i32 = -40;
const MAX_EXP: i32 = 8;
const BINS: u32 = 49u;

override OVERLAP: u32 = AGENTS + 1u;
override SIGN: u32 = OVERLAP + AGENTS * AGENTS;
override MAGNITUDE: u32 = SIGN + 1u;
override ULP: u32 = MAGNITUDE + AGENTS * BINS;
override NONFINITE: u32 = ULP + AGENTS;
override COUNTERS: u32 = NONFINITE + AGENTS + 2u;
// AGENTS <= 8: a changed element adds 1 to the workgroup counter of its set of changing agents (at
// LOCAL_SETS + set), and the flush derives counts, overlap and pairs from those 2^N counters. More
// agents count into counts and overlap directly, and pairs are not counted. (min: a shift by 32 or more is a pipeline error.)
const SETS_CAP: u32 = 8u;
override SETS: u32 = select(0u, 1u << min(AGENTS, SETS_CAP), AGENTS <= SETS_CAP);
override LOCAL_SETS: u32 = COUNTERS;
override LOCAL: u32 = COUNTERS + SETS;
override PAIRWISE: u32 = COUNTERS;
override SET_COUNTS: u32 = PAIRWISE + AGENTS * AGENTS;

@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>>;

var<workgroup> local: array<atomic<u32>, LOCAL>;
// Each agent's one-ulp changes among this invocation's elements (AGENTS <= 32, MAX_GPU_AGENTS), added
// to the workgroup's counter once at its end.
var<private> ulp_counts: array<u32, 32>;

// Bits of one ulp of the stored base values in the input dtype (powers of two, possibly f32
// subnormal patterns), so |tau| <= ulp is an integer comparison.
fn ulp_bits(base_bits: vec2<u32>) -> vec2<u32> {
  var min_exponent = 1u;
  var mantissa_bits = 23;
  if (IN_DTYPE == DTYPE_BF16) {
    mantissa_bits = 7;
  } else if (IN_DTYPE == DTYPE_F16) {
    // A half's exponent field 1 is f32 exponent 113; half subnormals share its ulp.
    min_exponent = 113u;
    mantissa_bits = 10;
  }
  let exponent = max((base_bits >> vec2<u32>(23u)) & vec2<u32>(0xffu), vec2<u32>(min_exponent));
  let u = vec2<i32>(exponent) - 127 - mantissa_bits;
  let normal = vec2<u32>(u + 127) << vec2<u32>(23u);
  let subnormal = vec2<u32>(1u) << vec2<u32>(clamp(u + 149, vec2<i32>(0), vec2<i32>(31)));
  return select(subnormal, normal, u >= vec2<i32>(-126));
}

// Counts one element from the set of agents that changed it and the set that raised it; returns 1
// for a sign conflict (summed per invocation, added once).
fn count_changes(changed: u32, positive: u32) -> u32 {
  let c = countOneBits(changed);
  if (c == 0u) {
    return 0u;
  }
  if (AGENTS <= SETS_CAP) {
    atomicAdd(&local[LOCAL_SETS + changed], 1u);
    return select(0u, 1u, c >= 2u && positive != 0u && positive != changed);
  }
  atomicAdd(&local[c], 1u);
  for (var t = 0u; t < AGENTS; t++) {
    if ((changed & (1u << t)) != 0u) {
      atomicAdd(&local[OVERLAP + t * AGENTS + c - 1u], 1u);
    }
  }
  return select(0u, 1u, c >= 2u && positive != 0u && positive != changed);
}

fn special(bits: vec2<u32>) -> vec2<bool> {
  return (bits & vec2<u32>(0x7f800000u)) == vec2<u32>(0x7f800000u);
}

fn bump(i: u32, undo: bool) {
  if (undo) {
    atomicSub(&local[i], 1u);
  } else {
    atomicAdd(&local[i], 1u);
  }
}

// Adds (or, to undo, subtracts) agent t's |tau| bin and one-ulp counts for the lanes in `ch`.
fn tally(t: u32, x: vec2<f32>, ulp: vec2<u32>, ch: vec2<bool>, undo: bool) {
  let key = bitcast<vec2<u32>>(x) & vec2<u32>(0x7fffffffu);
  let exponent = vec2<i32>(key >> vec2<u32>(23u)) - 127;
  let bin = vec2<u32>(clamp(exponent, vec2<i32>(MIN_EXP), vec2<i32>(MAX_EXP)) - MIN_EXP);
  let one = ch & (key <= ulp);
  let ones = countOneBits(select(0u, 1u, one.x) | select(0u, 2u, one.y));
  // An undo takes back what this invocation added for the same lanes, so the sum stays exact.
  if (undo) {
    ulp_counts[t] -= ones;
  } else {
    ulp_counts[t] += ones;
  }
  if (ch.x) {
    bump(MAGNITUDE + t * BINS + bin.x, undo);
  }
  if (ch.y) {
    bump(MAGNITUDE + t * BINS + bin.y, undo);
  }
}

// Rare path, for the lanes of pair p that turned out non-finite (SPEC.md "Non-finite values"): they
// are counted as nonFinite, per model, and the |tau| counts already made for them are taken back.
fn count_non_finite(p: u32, non_finite: vec2<bool>, changed: vec2<u32>) {
  let base_bits = load_pair_bits(0u, p);
  let base = bitcast<vec2<f32>>(base_bits);
  let ulp = ulp_bits(base_bits);
  atomicAdd(&local[NONFINITE], countOneBits(select(0u, 1u, non_finite.x) | select(0u, 2u, non_finite.y)));
  for (var m = 0u; m <= AGENTS; m++) {
    let bits = load_pair_bits(m, p);
    let hit = non_finite & special(bits);
    let n = countOneBits(select(0u, 1u, hit.x) | select(0u, 2u, hit.y));
    if (n != 0u) {
      atomicAdd(&local[NONFINITE + 1u + m], n);
    }
    if (m > 0u) {
      let bit = vec2<u32>(1u << (m - 1u));
      tally(m - 1u, bitcast<vec2<f32>>(bits) - base, ulp, non_finite & ((changed & bit) != vec2<u32>(0u)), true);
    }
  }
}

// Counts elements 2p and 2p+1 where `valid` says they lie in the window; returns their sign conflicts.
// Special values are told on bit patterns: an agent's change counts only where it and the base are
// finite, and an element whose bits differ somewhere and hold NaN or ±Inf is not classified at all.
fn count_pair(p: u32, valid: vec2<bool>) -> u32 {
  let base_bits = load_pair_bits(0u, p);
  let base = bitcast<vec2<f32>>(base_bits);
  let ulp = ulp_bits(base_bits);
  let base_finite = !special(base_bits);
  var any_special = !base_finite;
  var differs = vec2<bool>(false);
  var changed = vec2<u32>(0u);
  var positive = vec2<u32>(0u);
  for (var t = 0u; t < AGENTS; t++) {
    let bit = vec2<u32>(1u << t);
    let bits = load_pair_bits(t + 1u, p);
    let finite = !special(bits);
    any_special = any_special | !finite;
    differs = differs | (bits != base_bits);
    let x = bitcast<vec2<f32>>(bits) - base;
    let ch = valid & base_finite & finite & (abs(x) > vec2<f32>(params.epsilon));
    changed |= select(vec2<u32>(0u), bit, ch);
    positive |= select(vec2<u32>(0u), bit, ch & (x > vec2<f32>(0.0)));
    tally(t, x, ulp, ch, false);
  }
  let non_finite = valid & any_special & differs;
  if (any(non_finite)) {
    count_non_finite(p, non_finite, changed);
    changed = select(changed, vec2<u32>(0u), non_finite);
  }
  return count_changes(changed.x, positive.x) + count_changes(changed.y, positive.y);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  for (var i = lid; i < LOCAL; i += WORKGROUP) {
    atomicStore(&local[i], 0u);
  }
  workgroupBarrier();
  let first = group * WORKGROUP * PAIRS + lid;
  // Pairs past the window's end read the last pair (in bounds) and count nothing.
  let last = (params.count - 1u) >> 1u;
  var sign = 0u;
  for (var j = 0u; j < PAIRS; j++) {
    let p = first + j * WORKGROUP;
    sign += count_pair(min(p, last), vec2<u32>(2u * p, 2u * p + 1u) < vec2<u32>(params.count));
  }
  if (sign != 0u) {
    atomicAdd(&local[SIGN], sign);
  }
  for (var t = 0u; t < AGENTS; t++) {
    if (ulp_counts[t] != 0u) {
      atomicAdd(&local[ULP + t], ulp_counts[t]);
    }
  }
  workgroupBarrier();
  for (var i = lid; i < COUNTERS; i += WORKGROUP) {
    let v = atomicLoad(&local[i]);
    if (v != 0u) {
      atomicAdd(&counters[i], v);
    }
  }
  for (var m = 1u + lid; m < SETS; m += WORKGROUP) {
    let v = atomicLoad(&local[LOCAL_SETS + m]);
    if (v != 0u) {
      let c = countOneBits(m);
      atomicAdd(&counters[c], v);
      atomicAdd(&counters[SET_COUNTS + m], v);
      for (var t = 0u; t < AGENTS; t++) {
        if ((m & (1u << t)) != 0u) {
          atomicAdd(&counters[OVERLAP + t * AGENTS + c - 1u], v);
        }
      }
      // Each pair t < u of the set's agents, visited by clearing the lowest bits one at a time.
      var rest = m;
      while (rest != 0u) {
        let t = firstTrailingBit(rest);
        rest &= rest - 1u;
        var others = rest;
        while (others != 0u) {
          atomicAdd(&counters[PAIRWISE + t * AGENTS + firstTrailingBit(others)], v);
          others &= others - 1u;
        }
      }
    }
  }
}

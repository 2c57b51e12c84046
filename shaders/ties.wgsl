// TIES (mergekit `ties`) and, with DARE = true, DARE-TIES: per agent the sparsified tau (TIES: the
// top-k |tau| found by topk_hist, ties at the threshold kept lowest index first using the prefix sums
// of topk_scan plus a per-workgroup bitmap; DARE: the seeded Bernoulli mask, rescaled), the elected
// sign gamma = +1 iff sum_t w_t tau_t >= 0, then base + lambda * the (optionally weight-normalised)
// sum over the agents whose w_t tau_t has sign gamma. A zero never agrees.

override DARE: bool = false;

const MASK_WORDS: u32 = 16u;

@group(0) @binding(2) var<storage, read_write> output: array<u32>;
@group(0) @binding(4) var<storage, read> tie_prefix: array<u32>;

// Bit i of agent t's row: element i of this workgroup's range is a tie at t's threshold.
var<workgroup> tie_bits: array<atomic<u32>, AGENTS * MASK_WORDS>;

fn rank_in_group(t: u32, local: u32) -> u32 {
  let row = t * MASK_WORDS;
  let word = local >> 5u;
  var rank = 0u;
  for (var i = 0u; i < word; i++) {
    rank += countOneBits(atomicLoad(&tie_bits[row + i]));
  }
  return rank + countOneBits(atomicLoad(&tie_bits[row + word]) & ((1u << (local & 31u)) - 1u));
}

fn sparsified(t: u32, e: u32, local: u32, group: u32, base: f32) -> f32 {
  let x = tau(t, e, base);
  if (DARE) {
    return dare_tau(t, e, x);
  }
  let a = agents[t];
  let key = tau_key(t + 1u, e);
  if (key > a.threshold) {
    return x;
  }
  if (key != a.threshold || a.ties_to_keep == 0u) {
    return 0.0;
  }
  let rank = tie_prefix[t * params.groups + group] + rank_in_group(t, local);
  return select(0.0, x, rank < a.ties_to_keep);
}

fn merged_bits(e: u32, local: u32, group: u32) -> u32 {
  let base = load(0u, e);
  var vote = 0.0;
  for (var t = 0u; t < AGENTS; t++) {
    vote += agents[t].weight * sparsified(t, e, local, group, base);
  }
  let positive = vote >= 0.0;
  var sum = 0.0;
  var weights = 0.0;
  for (var t = 0u; t < AGENTS; t++) {
    let w = agents[t].weight;
    let x = sparsified(t, e, local, group, base);
    if (x != 0.0 && w != 0.0 && ((x > 0.0) == (w > 0.0)) == positive) {
      sum += w * x;
      weights += w;
    }
  }
  if (params.normalize != 0u && weights != 0.0) {
    sum = sum / weights;
  }
  return bitcast<u32>(base + params.scale * sum);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  let p = group * WORKGROUP + lid;
  let e = 2u * p;
  let lanes = select(min(params.count - e, 2u), 0u, e >= params.count);
  if (!DARE) {
    for (var i = lid; i < AGENTS * MASK_WORDS; i += WORKGROUP) {
      atomicStore(&tie_bits[i], 0u);
    }
    workgroupBarrier();
    if (lanes > 0u) {
      for (var t = 0u; t < AGENTS; t++) {
        let keys = tau_keys(t + 1u, p);
        for (var lane = 0u; lane < lanes; lane++) {
          if (keys[lane] == agents[t].threshold) {
            let local = 2u * lid + lane;
            atomicOr(&tie_bits[t * MASK_WORDS + (local >> 5u)], 1u << (local & 31u));
          }
        }
      }
    }
    workgroupBarrier();
  }
  if (lanes == 0u) {
    return;
  }
  let scan = scan_inputs(0u, p);
  var merged = vec2<u32>(merged_bits(e, 2u * lid, group), 0u);
  if (lanes == 2u) {
    merged.y = merged_bits(e + 1u, 2u * lid + 1u, group);
  }
  let out = finish_pair(p, merged, scan, vec2<bool>(true, lanes == 2u));
  if (OUT_DTYPE == DTYPE_F32) {
    output[e] = out.x;
    if (lanes == 2u) {
      output[e + 1u] = out.y;
    }
    return;
  }
  output[p] = out.x | (select(0u, out.y, lanes == 2u) << 16u);
}

// TIES (mergekit `ties`) and, with DARE = true, DARE-TIES: per agent the sparsified tau (TIES: the
// top-k |tau| found by topk_hist, ties at the threshold kept lowest index first by their ranks, from
// topk_scan's prefix per block of TIE_BLOCK_PAIRS pairs and the block's tie marks; DARE: the seeded
// Bernoulli mask, rescaled), the elected
// sign gamma = +1 iff sum_t w_t tau_t >= 0, then base + lambda * the (optionally weight-normalised)
// sum over the agents whose w_t tau_t has sign gamma. A zero never agrees.
// With BAND (Model Breadcrumbs) the kept top-k also loses each agent's top outliers (a second
// threshold, its tie ranks in rows AGENTS..2·AGENTS−1); without CONSENSUS the sparsified tau are
// summed as task arithmetic does (`breadcrumbs`), with it as TIES (`breadcrumbs_ties`). With
// COUNT_BRANCHES the agents summed into each element are counted (common/branches.wgsl).

override DARE: bool = false;
// Some agent keeps only part of the ties at a threshold, so the kernel needs their ranks.
override TIE_BREAK: bool = true;
override BAND: bool = false;
override CONSENSUS: bool = true;

@group(0) @binding(2) var<storage, read_write> output: array<u32>;
// Per tie block: its prefix and its tie bits (TIE_BLOCK_WORDS).
@group(0) @binding(4) var<storage, read> tie_prefix: array<vec2<u32>>;

// Ties in tie row `row` before element 2p: those of the earlier blocks (topk_scan's prefix) and the
// marks of topk_ties below pair p's in its block, both in one load.
fn tie_rank(row: u32, p: u32) -> u32 {
  let ties = tie_prefix[tie_block(row, p)];
  let below = (1u << (2u * (p % TIE_BLOCK_PAIRS))) - 1u;
  return ties.x + countOneBits(ties.y & below);
}

// Whether an agent's keys of pair p are in a top-k given as its threshold and the ties it keeps, the
// ties' ranks in tie-prefix row `row`.
fn in_top(row: u32, p: u32, key: vec2<u32>, threshold: u32, ties_to_keep: u32) -> vec2<bool> {
  var kept = key > vec2<u32>(threshold);
  if (TIE_BREAK) {
    let tie = key == vec2<u32>(threshold);
    if (ties_to_keep != 0u && any(tie)) {
      let first = tie_rank(row, p);
      let rank = vec2<u32>(first, first + select(0u, 1u, tie.x));
      kept = kept | (tie & (rank < vec2<u32>(ties_to_keep)));
    }
  }
  return kept;
}

// Agent t's sparsified tau of pair p, x = its raw tau, key = its |tau| bits (0 where it holds the
// base's bits).
fn sparsified(t: u32, p: u32, x: vec2<f32>, key: vec2<u32>) -> vec2<f32> {
  if (DARE) {
    return dare_pair(t, p, x);
  }
  // Fields read one by one: SwiftShader loads a whole struct when it is bound to a name.
  var kept = in_top(t, p, key, agents[t].threshold, agents[t].ties_to_keep);
  if (BAND) {
    kept = kept & !in_top(AGENTS + t, p, key, agents[t].outlier_threshold, agents[t].outliers_to_drop);
  }
  return select(vec2<f32>(0.0), x, kept);
}

// Task arithmetic of the sparsified tau (as task_arithmetic.wgsl): base + lambda * sum_t w_t tau_t,
// over sum_t w_t when normalising unless that sum is below 1e-8 in magnitude.
fn summed_pair(p: u32) -> Merged {
  let base_bits = load_pair_bits(0u, p);
  let base = bitcast<vec2<f32>>(base_bits);
  var scan = scan_start(0u, base_bits);
  var sum = vec2<f32>(0.0);
  var weights = 0.0;
  var branch = no_contributors();
  for (var t = 0u; t < AGENTS; t++) {
    let bits = load_pair_bits(t + 1u, p);
    scan = scan_add(scan, bits);
    let raw = bitcast<vec2<f32>>(bits) - base;
    let key = select(bitcast<vec2<u32>>(raw) & vec2<u32>(0x7fffffffu), vec2<u32>(0u), bits == base_bits);
    let w = agents[t].weight;
    let x = sparsified(t, p, raw, key);
    sum += w * x;
    weights += w;
    if (COUNT_BRANCHES) {
      branch = add_voter(branch, t, x, w, bits != base_bits);
    }
  }
  if (COUNT_BRANCHES) {
    count_branches(p, branch, vec2<bool>(true), vec2<bool>(true));
  }
  if (params.normalize != 0u && abs(weights) >= 1e-8) {
    sum = sum / weights;
  }
  return Merged(bitcast<vec2<u32>>(base + params.scale * sum), scan);
}

// Each agent's inputs are loaded once: the sums over the agents that agree with either sign are
// both kept, each in agent order, and the elected sign picks one, so the result is that of summing
// the agreeing agents after the vote.
fn merged_pair(p: u32) -> Merged {
  if (!CONSENSUS) {
    return summed_pair(p);
  }
  let base_bits = load_pair_bits(0u, p);
  let base = bitcast<vec2<f32>>(base_bits);
  var scan = scan_start(0u, base_bits);
  var vote = vec2<f32>(0.0);
  var sum_pos = vec2<f32>(0.0);
  var weights_pos = vec2<f32>(0.0);
  var sum_neg = vec2<f32>(0.0);
  var weights_neg = vec2<f32>(0.0);
  var branch = no_contributors();
  for (var t = 0u; t < AGENTS; t++) {
    let bits = load_pair_bits(t + 1u, p);
    scan = scan_add(scan, bits);
    let raw = bitcast<vec2<f32>>(bits) - base;
    let key = select(bitcast<vec2<u32>>(raw) & vec2<u32>(0x7fffffffu), vec2<u32>(0u), bits == base_bits);
    let x = sparsified(t, p, raw, key);
    let w = agents[t].weight;
    vote += w * x;
    let voting = (x != vec2<f32>(0.0)) & vec2<bool>(w != 0.0);
    let agrees = (x > vec2<f32>(0.0)) == vec2<bool>(w > 0.0);
    let pos = voting & agrees;
    let neg = voting & !agrees;
    sum_pos += select(vec2<f32>(0.0), w * x, pos);
    weights_pos += select(vec2<f32>(0.0), vec2<f32>(w), pos);
    sum_neg += select(vec2<f32>(0.0), w * x, neg);
    weights_neg += select(vec2<f32>(0.0), vec2<f32>(w), neg);
    if (COUNT_BRANCHES) {
      branch = add_voter(branch, t, x, w, bits != base_bits);
    }
  }
  let positive = vote >= vec2<f32>(0.0);
  if (COUNT_BRANCHES) {
    count_branches(p, branch, positive, !positive);
  }
  var sum = select(sum_neg, sum_pos, positive);
  let weights = select(weights_neg, weights_pos, positive);
  if (params.normalize != 0u) {
    sum = select(sum, sum / weights, weights != vec2<f32>(0.0));
  }
  return Merged(bitcast<vec2<u32>>(base + params.scale * sum), scan);
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
  if (lanes == 0u) {
    return;
  }
  let m = merged_pair(p);
  let out = finish_pair(p, m.bits, m.scan, vec2<bool>(true, lanes == 2u));
  if (OUT_DTYPE == DTYPE_F32) {
    output[e] = out.x;
    if (lanes == 2u) {
      output[e + 1u] = out.y;
    }
    return;
  }
  output[p] = out.x | (select(0u, out.y, lanes == 2u) << 16u);
}

// TIES (mergekit `ties`) and, with DARE = true, DARE-TIES: per agent the sparsified tau (TIES: the
// top-k |tau| found by topk_hist, ties at the threshold kept lowest index first: those before the
// row's cutoff, which topk_ties and topk_scan find; DARE: the seeded Bernoulli mask, rescaled), the
// elected sign gamma = +1 iff sum_t w_t tau_t >= 0, then base + lambda * the (optionally
// weight-normalised) sum over the agents whose w_t tau_t has sign gamma. A zero never agrees.
// With BAND (Model Breadcrumbs) the kept top-k also loses each agent's top outliers (a second
// threshold, its cutoff in row AGENTS + t); without CONSENSUS the sparsified tau are summed as task
// arithmetic does (`breadcrumbs`), with it as TIES (`breadcrumbs_ties`). With COUNT_BRANCHES the
// agents summed into each element are counted (common/branches.wgsl).

override DARE: bool = false;
// Some agent keeps only part of the ties at a threshold, so the kernel reads the cutoffs.
override TIE_BREAK: bool = true;
override BAND: bool = false;
override CONSENSUS: bool = true;

@group(0) @binding(2) var<storage, read_write> output: array<u32>;
// Per tie row, the window-local index of its first tie not kept (topk_scan's carry, words 0..2·AGENTS−1).
@group(0) @binding(4) var<storage, read> tie_cutoffs: array<u32>;

// Whether an agent's keys of pair p are in a top-k given as its threshold and, with TIE_BREAK, the
// cutoff in tie row `row` below which its ties are kept: a comparison per lane, no rank.
fn in_top(row: u32, p: u32, key: vec2<u32>, threshold: u32) -> vec2<bool> {
  let kept = key > vec2<u32>(threshold);
  if (TIE_BREAK) {
    let e = vec2<u32>(2u * p, 2u * p + 1u);
    return kept | ((key == vec2<u32>(threshold)) & (e < vec2<u32>(tie_cutoffs[row])));
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
  var kept = in_top(t, p, key, agents[t].threshold);
  if (BAND) {
    kept = kept & !in_top(AGENTS + t, p, key, agents[t].outlier_threshold);
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

// TIES (mergekit `ties`) and, with DARE = true, DARE-TIES (with DELLA = true, DELLA and
// DELLA-linear): per agent the sparsified tau (TIES: the top-k |tau| found by topk_hist, ties at the
// threshold kept lowest index first: those before the row's cutoff, which topk_ties and topk_scan
// find; DARE: the seeded Bernoulli mask, rescaled; DELLA: della_mask's factors), the
// elected sign gamma = +1 iff sum_t w_t tau_t >= 0, then base + lambda * the (optionally
// weight-normalised) sum over the agents whose w_t tau_t has sign gamma. A zero never agrees.
// With BAND (Model Breadcrumbs) the kept top-k also loses each agent's top outliers (a second
// threshold, its cutoff in row AGENTS + t); without CONSENSUS the sparsified tau are summed as task
// arithmetic does (`breadcrumbs`), with it as TIES (`breadcrumbs_ties`). Without TOP_K and without
// CONSENSUS it is task arithmetic, base + lambda * sum_t w_t tau_t, of the raw tau or with DARE of
// DARE's (`task_arithmetic`, `dare_linear`). With COUNT_BRANCHES the agents summed into each element
// are counted (common/branches.wgsl).

override DARE: bool = false;
// DELLA: tie_cutoffs holds della_mask.wgsl's factors instead (f32 bits, agent-major: agent t's
// element e at t * count + e), each agent's tau multiplied by them (0 where dropped).
override DELLA: bool = false;
// Without DARE: each agent's top-k (TIES, Breadcrumbs), or else its raw tau.
override TOP_K: bool = true;
// Some agent keeps only part of the ties at a threshold, so the kernel reads the cutoffs.
override TIE_BREAK: bool = true;
override BAND: bool = false;
override CONSENSUS: bool = true;

@group(0) @binding(2) var<storage, read_write> output: array<u32>;
// Per tie row, the window-local index of its first tie not kept (topk_scan's carry, words 0..2·AGENTS−1).
@group(0) @binding(4) var<storage, read> tie_cutoffs: array<u32>;

// Agent t's cuts over the four elements of an invocation's two pairs, loaded and worked out once
// for both (SwiftShader loads a value indexed by the agent per lane, as it loads the inputs): per
// element the key its kept |tau| bits lie above, and with BAND the key its dropped outliers lie above.
// With TIE_BREAK a tie is kept before its row's cutoff: there the key is the threshold − 1, so that the
// kept keys are those at or above the threshold (a threshold of 0 stays 0: keeping a zero key changes
// nothing, and a NaN's key is above 0 either way).
struct Cuts {
  above: vec4<u32>,
  outlier_above: vec4<u32>,
}

// The key above which a top-k keeps the invocation's elements, from its threshold and, with
// TIE_BREAK, the window-local index of its first tie not kept.
fn kept_above(threshold: u32, cutoff: u32, first: u32) -> vec4<u32> {
  let t = vec4<u32>(threshold);
  if (!TIE_BREAK) {
    return t;
  }
  let e = vec4<u32>(2u * first) + vec4<u32>(0u, 1u, 2u, 3u);
  let tie_kept = (e < vec4<u32>(cutoff)) & (t != vec4<u32>(0u));
  return t - select(vec4<u32>(0u), vec4<u32>(1u), tie_kept);
}

fn cuts(t: u32, first: u32) -> Cuts {
  var c = Cuts(vec4<u32>(0u), vec4<u32>(0u));
  if (TOP_K && !DARE) {
    var cutoff = 0u;
    if (TIE_BREAK) {
      cutoff = tie_cutoffs[t];
    }
    c.above = kept_above(agents[t].threshold, cutoff, first);
    if (BAND) {
      var outlier_cutoff = 0u;
      if (TIE_BREAK) {
        outlier_cutoff = tie_cutoffs[AGENTS + t];
      }
      c.outlier_above = kept_above(agents[t].outlier_threshold, outlier_cutoff, first);
    }
  }
  return c;
}

// The cuts of one pair: the first or second half of the invocation's.
struct PairCuts {
  above: vec2<u32>,
  outlier_above: vec2<u32>,
}

// Agent t's sparsified tau of pair p, x = its raw tau, key = its |tau| bits (0 where it holds the
// base's bits).
fn sparsified(t: u32, p: u32, x: vec2<f32>, key: vec2<u32>, c: PairCuts) -> vec2<f32> {
  if (DELLA) {
    let e = 2u * p;
    let row = t * params.count;
    let factors = vec2<u32>(tie_cutoffs[row + e], tie_cutoffs[row + min(e + 1u, params.count - 1u)]);
    return x * bitcast<vec2<f32>>(factors);
  }
  if (DARE) {
    return dare_pair(t, p, x);
  }
  if (!TOP_K) {
    return x;
  }
  var kept = key > c.above;
  if (BAND) {
    kept = kept & !(key > c.outlier_above);
  }
  return select(vec2<f32>(0.0), x, kept);
}

// What the merge of one pair has gathered from the agents so far. With CONSENSUS the vote and the
// sums over the agents that agree with either sign, each in agent order (the elected sign picks one,
// so the result is that of summing the agreeing agents after the vote); without it (task arithmetic
// of the sparsified tau) the sum and the weights in sum_pos / weights_pos.
struct Tally {
  base_bits: vec2<u32>,
  scan: Scan,
  vote: vec2<f32>,
  sum_pos: vec2<f32>,
  weights_pos: vec2<f32>,
  sum_neg: vec2<f32>,
  weights_neg: vec2<f32>,
  branch: Voters,
}

fn tally_start(p: u32) -> Tally {
  let base_bits = load_pair_bits(0u, p);
  let zero = vec2<f32>(0.0);
  return Tally(base_bits, scan_start(0u, base_bits), zero, zero, zero, zero, zero, no_voters());
}

// Adds agent t (weight w, sparsification c) to pair p's tally.
fn tally_add(a: Tally, t: u32, p: u32, c: PairCuts, w: f32) -> Tally {
  var r = a;
  let bits = load_pair_bits(t + 1u, p);
  r.scan = scan_add(a.scan, bits);
  let raw = bitcast<vec2<f32>>(bits) - bitcast<vec2<f32>>(a.base_bits);
  let changed = bits != a.base_bits;
  let key = select(vec2<u32>(0u), bitcast<vec2<u32>>(raw) & vec2<u32>(0x7fffffffu), changed);
  let x = sparsified(t, p, raw, key, c);
  let wx = unfused_product(vec2<f32>(w), x);
  if (CONSENSUS) {
    r.vote += wx;
    let voting = (x != vec2<f32>(0.0)) & vec2<bool>(w != 0.0);
    let agrees = (x > vec2<f32>(0.0)) == vec2<bool>(w > 0.0);
    let pos = voting & agrees;
    let neg = voting & !agrees;
    r.sum_pos += select(vec2<f32>(0.0), wx, pos);
    r.weights_pos += select(vec2<f32>(0.0), vec2<f32>(w), pos);
    r.sum_neg += select(vec2<f32>(0.0), wx, neg);
    r.weights_neg += select(vec2<f32>(0.0), vec2<f32>(w), neg);
    if (COUNT_BRANCHES) {
      // add_voter's sides are these, where the agent's bits differ from the base's.
      r.branch = add_sides(a.branch, t, pos & changed, neg & changed);
    }
  } else {
    r.sum_pos += wx;
    r.weights_pos += vec2<f32>(w);
    if (COUNT_BRANCHES) {
      r.branch = add_voter(a.branch, t, x, w, changed);
    }
  }
  return r;
}

// A pair's merged bits from its tally over every agent. Without CONSENSUS the sum is divided by the
// weights when normalising unless they sum to less than 1e-8 in magnitude, as mergekit does.
fn tally_merged(a: Tally) -> Merged {
  let base = bitcast<vec2<f32>>(a.base_bits);
  var sum = a.sum_pos;
  if (!CONSENSUS) {
    if (params.normalize != 0u && abs(a.weights_pos.x) >= 1e-8) {
      sum = exact_quotient(sum, a.weights_pos);
    }
    return Merged(bitcast<vec2<u32>>(base + unfused_product(vec2<f32>(params.scale), sum)), a.scan);
  }
  let positive = a.vote >= vec2<f32>(0.0);
  sum = select(a.sum_neg, a.sum_pos, positive);
  let weights = select(a.weights_neg, a.weights_pos, positive);
  if (params.normalize != 0u) {
    sum = select(sum, exact_quotient(sum, weights), weights != vec2<f32>(0.0));
  }
  return Merged(bitcast<vec2<u32>>(base + unfused_product(vec2<f32>(params.scale), sum)), a.scan);
}

// The agents summed into a pair by tally_merged: all voters without CONSENSUS, else the elected side's.
fn tally_branches(a: Tally) -> Branches {
  if (!CONSENSUS) {
    return summed_branches(a.branch, vec2<bool>(true), vec2<bool>(true));
  }
  let positive = a.vote >= vec2<f32>(0.0);
  return summed_branches(a.branch, positive, !positive);
}

// Writes pair p's output word(s), a pair inside the window.
fn write_pair(p: u32, m: Merged) {
  let e = 2u * p;
  let both = e + 1u < params.count;
  let out = finish_pair(p, m.bits, m.scan, vec2<bool>(true, both));
  if (OUT_DTYPE == DTYPE_F32) {
    output[e] = out.x;
    if (both) {
      output[e + 1u] = out.y;
    }
    return;
  }
  output[p] = out.x | (select(0u, out.y, both) << 16u);
}

// The tallies of an invocation's two pairs.
struct Tallies {
  a: Tally,
  b: Tally,
}

// Adds agent t to both pairs, first and first + 1, its parameters loaded once.
fn add_agent(s: Tallies, t: u32, first: u32) -> Tallies {
  let c = cuts(t, first);
  let w = agents[t].weight;
  return Tallies(
    tally_add(s.a, t, first, PairCuts(c.above.xy, c.outlier_above.xy), w),
    tally_add(s.b, t, first + 1u, PairCuts(c.above.zw, c.outlier_above.zw), w),
  );
}

// Merges pairs first and first + 1 (each agent's parameters loaded once for both) and writes what lies
// inside the window; past its end the second pair's loads read what the buffer holds there (or 0).
fn merge_pairs(first: u32) -> Tallies {
  var s = Tallies(tally_start(first), tally_start(first + 1u));
  // Agents written out up to eight: SwiftShader does not unroll a loop of a constant count.
  if (AGENTS <= 8u) {
    s = add_agent(s, 0u, first);
    if (AGENTS > 1u) {
      s = add_agent(s, 1u, first);
    }
    if (AGENTS > 2u) {
      s = add_agent(s, 2u, first);
    }
    if (AGENTS > 3u) {
      s = add_agent(s, 3u, first);
    }
    if (AGENTS > 4u) {
      s = add_agent(s, 4u, first);
    }
    if (AGENTS > 5u) {
      s = add_agent(s, 5u, first);
    }
    if (AGENTS > 6u) {
      s = add_agent(s, 6u, first);
    }
    if (AGENTS > 7u) {
      s = add_agent(s, 7u, first);
    }
  } else {
    for (var t = 0u; t < AGENTS; t++) {
      s = add_agent(s, t, first);
    }
  }
  write_pair(first, tally_merged(s.a));
  if (2u * first + 2u < params.count) {
    write_pair(first + 1u, tally_merged(s.b));
  }
  return s;
}

// Two adjacent pairs per invocation (kernels/ties.ts dispatches half the merge's workgroups); with
// COUNT_BRANCHES, BRANCH_ROUNDS such rounds, a workgroup's rounds one after another, so that the counts
// are added to the counters once per invocation (common/branches.wgsl).
@compute @workgroup_size(WORKGROUP)
fn main(
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) groups: vec3u,
  @builtin(local_invocation_index) lid: u32,
) {
  let group = wid.y * groups.x + wid.x;
  if (!COUNT_BRANCHES) {
    let first = 2u * (group * WORKGROUP + lid);
    if (2u * first < params.count) {
      _ = merge_pairs(first);
    }
    return;
  }
  var fields = no_branch_fields();
  for (var j = 0u; j < BRANCH_ROUNDS; j++) {
    let first = 2u * ((group * BRANCH_ROUNDS + j) * WORKGROUP + lid);
    if (2u * first >= params.count) {
      break;
    }
    let s = merge_pairs(first);
    fields = add_branches(fields, first, tally_branches(s.a));
    fields = add_branches(fields, first + 1u, tally_branches(s.b));
  }
  flush_branches(group, fields);
}

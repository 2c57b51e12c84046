// Task arithmetic, base + lambda * sum_t w_t tau_t (over sum_t w_t when normalising, unless that sum
// is below 1e-8 in magnitude, as mergekit does), and with DARE = true its DARE variant (`dare_linear`):
// each tau entry first kept with probability density and rescaled by 1/density. With COUNT_BRANCHES
// (DARE-linear) the agents summed into each element are counted (common/branches.wgsl).

override DARE: bool = false;

fn merged_pair(p: u32) -> Merged {
  let base_bits = load_pair_bits(0u, p);
  let base = bitcast<vec2<f32>>(base_bits);
  var scan = scan_start(0u, base_bits);
  var sum = vec2<f32>(0.0);
  var weights = 0.0;
  var branch = no_contributors();
  for (var t = 0u; t < AGENTS; t++) {
    let bits = load_pair_bits(t + 1u, p);
    scan = scan_add(scan, bits);
    var x = bitcast<vec2<f32>>(bits) - base;
    if (DARE) {
      x = dare_pair(t, p, x);
    }
    let w = agents[t].weight;
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

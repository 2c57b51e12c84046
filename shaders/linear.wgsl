// Linear merge (mergekit `linear`): sum_t w_t theta_t, divided by sum_t w_t when normalising (a zero
// weight sum is left undivided). The base is not an input of this method, so agent 0's bits are the
// reference of the non-finite checks.

fn merged_pair(p: u32) -> Merged {
  var sum = vec2<f32>(0.0);
  var weights = 0.0;
  let first = load_pair_bits(1u, p);
  var scan = scan_start(1u, first);
  for (var t = 0u; t < AGENTS; t++) {
    let w = agents[t].weight;
    var x = first;
    if (t > 0u) {
      x = load_pair_bits(t + 1u, p);
      scan = scan_add(scan, x);
    }
    sum += unfused_product(vec2<f32>(w), bitcast<vec2<f32>>(x));
    weights += w;
  }
  if (params.normalize != 0u && weights != 0.0) {
    sum = exact_quotient(sum, vec2<f32>(weights));
  }
  return Merged(bitcast<vec2<u32>>(sum), scan);
}

// SLERP (mergekit `slerp`): base * a + agent * b with the whole tensor's coefficients, worked out on the
// host from the sums pass (slerp_sums.wgsl): agent 0's `lambda` holds a and its `weight` b. CPU
// reference: slerpApply in src/methods/slerp.ts.

fn merged_pair(p: u32) -> Merged {
  let base_bits = load_pair_bits(0u, p);
  let bits = load_pair_bits(1u, p);
  let scan = scan_add(scan_start(0u, base_bits), bits);
  let a = unfused_product(vec2<f32>(agents[0].lambda), bitcast<vec2<f32>>(base_bits));
  let b = unfused_product(vec2<f32>(agents[0].weight), bitcast<vec2<f32>>(bits));
  return Merged(bitcast<vec2<u32>>(a + b), scan);
}

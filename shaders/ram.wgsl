// RAM / RAM+ / RAM+s / tensor-local RAM+ (SPEC.md): where no agent changed an element the base is kept
// bit for bit; one contributor t gives base + lambda_t tau_t; two or more give base + the mean of the
// contributing taus. The variants differ only in the per-agent lambda.

fn merged_pair(p: u32) -> Merged {
  let base_bits = load_pair_bits(0u, p);
  let base = bitcast<vec2<f32>>(base_bits);
  var scan = scan_start(0u, base_bits);
  var sum = vec2<f32>(0.0);
  var contributors = vec2<u32>(0u);
  var single = vec2<f32>(0.0);
  for (var t = 0u; t < AGENTS; t++) {
    let bits = load_pair_bits(t + 1u, p);
    scan = scan_add(scan, bits);
    let x = bitcast<vec2<f32>>(bits) - base;
    let changed = abs(x) > vec2<f32>(params.epsilon);
    sum += select(vec2<f32>(0.0), x, changed);
    contributors += select(vec2<u32>(0u), vec2<u32>(1u), changed);
    single = select(single, agents[t].lambda * x, changed);
  }
  let mean = base + sum / vec2<f32>(max(contributors, vec2<u32>(1u)));
  let merged = select(mean, base + single, contributors == vec2<u32>(1u));
  return Merged(select(bitcast<vec2<u32>>(merged), base_bits, contributors == vec2<u32>(0u)), scan);
}

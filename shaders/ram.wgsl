// RAM / RAM+ / RAM+s / tensor-local RAM+ (SPEC.md): where no agent changed an element the base is kept
// bit for bit; one contributor t gives base + lambda_t tau_t; two or more give base + the mean of the
// contributing taus. The variants differ only in the per-agent lambda.

// What the agents so far add up to at one pair (a plain value: SwiftShader keeps private variables
// in memory).
struct Acc {
  scan: Scan,
  sum: vec2<f32>,
  contributors: vec2<u32>,
  single: vec2<f32>,
}

fn add_agent(a: Acc, t: u32, p: u32, base: vec2<f32>) -> Acc {
  let bits = load_pair_bits(t + 1u, p);
  let x = bitcast<vec2<f32>>(bits) - base;
  let changed = abs(x) > vec2<f32>(params.epsilon);
  return Acc(
    scan_add(a.scan, bits),
    a.sum + select(vec2<f32>(0.0), x, changed),
    a.contributors + select(vec2<u32>(0u), vec2<u32>(1u), changed),
    select(a.single, unfused_product(vec2<f32>(agents[t].lambda), x), changed),
  );
}

fn merged_pair(p: u32) -> Merged {
  let base_bits = load_pair_bits(0u, p);
  let base = bitcast<vec2<f32>>(base_bits);
  var a = Acc(scan_start(0u, base_bits), vec2<f32>(0.0), vec2<u32>(0u), vec2<f32>(0.0));
  // Agents written out up to eight: SwiftShader does not unroll a loop of a constant count.
  if (AGENTS <= 8u) {
    a = add_agent(a, 0u, p, base);
    if (AGENTS > 1u) {
      a = add_agent(a, 1u, p, base);
    }
    if (AGENTS > 2u) {
      a = add_agent(a, 2u, p, base);
    }
    if (AGENTS > 3u) {
      a = add_agent(a, 3u, p, base);
    }
    if (AGENTS > 4u) {
      a = add_agent(a, 4u, p, base);
    }
    if (AGENTS > 5u) {
      a = add_agent(a, 5u, p, base);
    }
    if (AGENTS > 6u) {
      a = add_agent(a, 6u, p, base);
    }
    if (AGENTS > 7u) {
      a = add_agent(a, 7u, p, base);
    }
  } else {
    for (var t = 0u; t < AGENTS; t++) {
      a = add_agent(a, t, p, base);
    }
  }
  let mean = base + exact_quotient(a.sum, vec2<f32>(max(a.contributors, vec2<u32>(1u))));
  let merged = select(mean, base + a.single, a.contributors == vec2<u32>(1u));
  return Merged(select(bitcast<vec2<u32>>(merged), base_bits, a.contributors == vec2<u32>(0u)), a.scan);
}

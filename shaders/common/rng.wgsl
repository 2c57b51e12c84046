// The DARE keep/drop draw: a counter-based hash of (seed, tensor name hash, agent, element index),
// bit-identical to src/methods/rng.ts, so the CPU reference and the GPU drop the same entries.

fn pcg_hash(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

fn dare_hash(seed: u32, name_hash: u32, agent: u32, index_lo: u32, index_hi: u32) -> u32 {
  var h = pcg_hash(seed ^ 0x9e3779b9u);
  h = pcg_hash(h ^ name_hash);
  h = pcg_hash(h ^ agent);
  h = pcg_hash(h ^ index_lo);
  return pcg_hash(h ^ index_hi);
}

// Whether DARE keeps agent t's entry at element e of the window.
fn dare_kept(t: u32, e: u32) -> bool {
  let lo = params.start_lo + e;
  let hi = params.start_hi + select(0u, 1u, lo < e);
  return (dare_hash(params.seed, params.name_hash, t, lo, hi) >> 8u) < agents[t].keep_below;
}

// Agent t's DARE-sparsified, rescaled tau at element e of the window.
fn dare_tau(t: u32, e: u32, x: f32) -> f32 {
  return select(0.0, x * agents[t].inv_density, dare_kept(t, e));
}

// The same for the element pair (2p, 2p+1).
fn dare_pair(t: u32, p: u32, x: vec2<f32>) -> vec2<f32> {
  let kept = vec2<bool>(dare_kept(t, 2u * p), dare_kept(t, 2u * p + 1u));
  return select(vec2<f32>(0.0), x * agents[t].inv_density, kept);
}

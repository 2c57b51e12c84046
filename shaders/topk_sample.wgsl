// TIES top-k select, step 0: a sample of each agent's |tau| bits (the keys topk_hist counts), from
// which the host guesses where each threshold lies (src/engine/topk-select.ts). Invocation i takes one
// element pair from the i-th of SAMPLE_PAIRS equal strides of the window, at a hashed offset inside
// it, so a stride that is a multiple of a row's length does not sample one column. Where the window
// has no more pairs than SAMPLE_PAIRS every pair is taken. A key past the window's end, or of a
// pair never taken, is written as NO_KEY (no |tau| has those bits).
//
// sample layout: agent t's keys at words t · 2 · SAMPLE_PAIRS + 2i and + 2i + 1.

override SAMPLE_PAIRS: u32 = 16384u;

const NO_KEY: u32 = 0xffffffffu;

@group(0) @binding(2) var<storage, read_write> histogram: array<u32>;

fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let i = workgroup_index(wid) * WORKGROUP + lid;
  if (i >= SAMPLE_PAIRS) {
    return;
  }
  let pairs = (params.count + 1u) / 2u;
  let stride = max(pairs / SAMPLE_PAIRS, 1u);
  let p = i * stride + pcg(i) % stride;
  let taken = p < pairs;
  let p_in = min(p, pairs - 1u);
  let valid = vec2<bool>(taken, taken && 2u * p_in + 1u < params.count);
  let base = load_pair_bits(0u, p_in);
  for (var t = 0u; t < AGENTS; t++) {
    let keys = select(vec2<u32>(NO_KEY), pair_keys(load_pair_bits(t + 1u, p_in), base), valid);
    let at = t * 2u * SAMPLE_PAIRS + 2u * i;
    histogram[at] = keys.x;
    histogram[at + 1u] = keys.y;
  }
}

// Element access for the kernels that read the input slots (window.wgsl) one u32 word at a time,
// decoding the input dtype.

@group(0) @binding(1) var<storage, read> inputs: array<u32>;

// f32 bits of element e of input slot `slot`.
fn load_bits(slot: u32, e: u32) -> u32 {
  let base = slot * params.slot_words;
  if (IN_DTYPE == DTYPE_F32) {
    return inputs[base + e];
  }
  let word = inputs[base + (e >> 1u)];
  return decode16(IN_DTYPE, select(word & 0xffffu, word >> 16u, (e & 1u) == 1u));
}

fn load(slot: u32, e: u32) -> f32 {
  return bitcast<f32>(load_bits(slot, e));
}

// f32 bits of elements 2p and 2p+1 of input slot `slot`, with one load of a 16-bit input's word. Past
// the window's end the second lane is meaningless (an f32 input re-reads the last element).
fn load_pair_bits(slot: u32, p: u32) -> vec2<u32> {
  let base = slot * params.slot_words;
  if (IN_DTYPE == DTYPE_F32) {
    let e = 2u * p;
    return vec2<u32>(inputs[base + e], inputs[base + min(e + 1u, params.count - 1u)]);
  }
  let word = inputs[base + p];
  return vec2<u32>(decode16(IN_DTYPE, word & 0xffffu), decode16(IN_DTYPE, word >> 16u));
}

fn load_pair(slot: u32, p: u32) -> vec2<f32> {
  return bitcast<vec2<f32>>(load_pair_bits(slot, p));
}

// tau of agent t (0-based) at element e, in f32 from the stored values.
fn tau(t: u32, e: u32, base: f32) -> f32 {
  return load(t + 1u, e) - base;
}

// |x| as its bit pattern: ordered like the magnitudes, and immune to flushing or NaN comparisons.
fn magnitude_key(x: f32) -> u32 {
  return bitcast<u32>(x) & 0x7fffffffu;
}

// The TIES select's |tau| bits of input `slot` at elements 2p, 2p+1: 0 wherever the agent holds the
// base's bits, so an element every model stores as the same NaN or ±Inf is unchanged (SPEC.md).
fn tau_keys(slot: u32, p: u32) -> vec2<u32> {
  return pair_keys(load_pair_bits(slot, p), load_pair_bits(0u, p));
}

// tau_keys from an agent's and the base's f32 bits, for kernels that load the base once per pair.
fn pair_keys(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let x = bitcast<vec2<f32>>(a) - bitcast<vec2<f32>>(b);
  return select(bitcast<vec2<u32>>(x) & vec2<u32>(0x7fffffffu), vec2<u32>(0u), a == b);
}

fn tau_key(slot: u32, e: u32) -> u32 {
  let a = load_bits(slot, e);
  let b = load_bits(0u, e);
  return select(magnitude_key(bitcast<f32>(a) - bitcast<f32>(b)), 0u, a == b);
}

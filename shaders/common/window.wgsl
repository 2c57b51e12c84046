// The layout every kernel shares: one uniform of window parameters, the N+1 input slots packed in one
// storage buffer (slot 0 = base, slot t+1 = agent t, each window at word 0 of its slot), per-agent
// parameters, and element access that decodes the input dtype.

override IN_DTYPE: u32 = 0u;
override AGENTS: u32 = 2u;
override OUT_DTYPE: u32 = 0u;

const WORKGROUP: u32 = 256u;
// TIES tie-break: ties are marked per block of this many element pairs of a merge dispatch, each
// block in TIE_BLOCK_WORDS words of a bit per element (bit i for element i of the block), which
// topk_scan counts to find the first tie not kept.
const TIE_BLOCK_PAIRS: u32 = 16u;
const TIE_BLOCK_WORDS: u32 = 1u;

fn tie_blocks() -> u32 {
  return params.groups * (WORKGROUP / TIE_BLOCK_PAIRS);
}

// Index of pair p's block in tie row `row`, counted in blocks.
fn tie_block(row: u32, p: u32) -> u32 {
  return row * tie_blocks() + p / TIE_BLOCK_PAIRS;
}

struct Params {
  count: u32,        // elements in this window
  slot_words: u32,   // u32 words between the starts of two input slots
  start_lo: u32,     // index in the tensor of the window's first element, low and high 32 bits
  start_hi: u32,
  groups_x: u32,     // workgroups per row of a 2D dispatch
  groups: u32,       // workgroups that do work; the rest of the last row returns at once
  epsilon: f32,      // |tau| > epsilon counts as changed
  scale: f32,        // lambda of task arithmetic, TIES and DARE
  name_hash: u32,    // FNV-1a-32 of the tensor name, for the DARE mask
  seed: u32,
  digit_shift: u32,  // radix select: lowest bit of the digit counted in this pass
  digit_bits: u32,
  normalize: u32,
}

struct Agent {
  lambda: f32,        // RAM family: scale of this agent's unique changes
  weight: f32,
  inv_density: f32,   // DARE: rescale of kept entries
  keep_below: u32,    // DARE: keep an entry iff (hash >> 8) < keep_below
  threshold: u32,     // TIES: keep |tau| bits above this ...
  ties_to_keep: u32,  // ... and this many equal to it, lowest index first
  prefix: u32,        // radix select: the high bits chosen so far
  searching: u32,     // radix select: this agent's threshold is still being searched
  outlier_threshold: u32,  // Model Breadcrumbs: |tau| bits above this are dropped as outliers ...
  outliers_to_drop: u32,   // ... and this many equal to it, lowest index first
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> inputs: array<u32>;
@group(0) @binding(3) var<storage, read> agents: array<Agent>;

fn workgroup_index(wid: vec3u) -> u32 {
  return wid.y * params.groups_x + wid.x;
}

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

// f32 bits of a pair in OUT_DTYPE: unchanged for f32, else each lane's 16-bit value in its low half.
fn encode_pair(bits: vec2<u32>) -> vec2<u32> {
  if (OUT_DTYPE == DTYPE_F32) {
    return bits;
  }
  return vec2<u32>(encode16(OUT_DTYPE, bits.x), encode16(OUT_DTYPE, bits.y));
}

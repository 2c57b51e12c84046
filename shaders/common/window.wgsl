// The layout every kernel shares: one uniform of window parameters, the N+1 input slots packed in one
// storage buffer (slot 0 = base, slot t+1 = agent t, each window at word 0 of its slot), per-agent
// parameters. Element access that decodes the input dtype is in inputs.wgsl (binding 1), which a
// kernel that reads its inputs another way leaves out.

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
  chunk_base: u32,   // TIES count pass: the window's first chunk (count workgroup) in the tensor
  unfused: u32,      // always 0; see unfused_product
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
  tie_first: u32,     // TIES: ties are marked only in elements [tie_first, tie_end) of the tensor,
  tie_end: u32,       // ties_to_keep counting from tie_first (equal: everywhere)
  outlier_tie_first: u32,  // Model Breadcrumbs: the same for the outliers' ties,
  outlier_tie_end: u32,    // outliers_to_drop counting from outlier_tie_first
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> agents: array<Agent>;

// a * b rounded to f32 before anything adds it. WGSL lets a compiler fuse a * b + c into one fused
// multiply-add with a single rounding, and NVIDIA's Vulkan compiler does (an H200 run of the mergekit
// parity test: linear differed from mergekit in 1,513 elements); mergekit (PyTorch) and the CPU
// reference round the product first. An integer operation with a value the compiler cannot know
// (params.unfused, 0 in every window) makes the product an f32 value first. Every product that a
// merge kernel adds to something goes through here.
fn unfused_product(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  return bitcast<vec2<f32>>(bitcast<vec2<u32>>(a * b) ^ vec2<u32>(params.unfused));
}

fn workgroup_index(wid: vec3u) -> u32 {
  return wid.y * params.groups_x + wid.x;
}

// f32 bits of a pair in OUT_DTYPE: unchanged for f32, else each lane's 16-bit value in its low half.
fn encode_pair(bits: vec2<u32>) -> vec2<u32> {
  if (OUT_DTYPE == DTYPE_F32) {
    return bits;
  }
  return vec2<u32>(encode16(OUT_DTYPE, bits.x), encode16(OUT_DTYPE, bits.y));
}
